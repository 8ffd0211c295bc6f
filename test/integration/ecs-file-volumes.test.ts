import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { V1Pod } from '@kubernetes/client-node';
import { VOLUME_WRITER_NAME } from '../../lib/provider/ecs/volume-writer.ts';
import { isProviderWaiting } from '../../lib/provider/provider.ts';
import type { VolumeSources } from '../../lib/provider/volume-sources.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { ecsFixtures, ecsPod } from '../support/ecs-sim/ecs-fixture.ts';
import { testEnv } from '../support/env.ts';
import { uniqueName } from '../support/kube.ts';

/**
 * File volumes on the ECS Fargate provider against the AWS simulation (the
 * real SDK clients, only their transport replaced) and DynamoDB Local: what
 * is created where, that a Secret's bytes reach SSM only, a pod waiting for
 * its ConfigMap, and an update that keeps the task and its files.
 */

const { fixture, table } = ecsFixtures();

/** ConfigMaps and Secrets by `<namespace>/<name>`, as the API server would serve them. */
class Objects implements VolumeSources {
  readonly configMaps = new Map<string, Map<string, Buffer>>();
  readonly secrets = new Map<string, Map<string, Buffer>>();
  reads = 0;
  async configMap(namespace: string, name: string) {
    this.reads++;
    return this.configMaps.get(`${namespace}/${name}`);
  }
  async secret(namespace: string, name: string) {
    this.reads++;
    return this.secrets.get(`${namespace}/${name}`);
  }
}

function withVolumes(pod: V1Pod, labels: Record<string, string> = { app: 'web' }): V1Pod {
  const spec = pod.spec;
  assert.ok(spec);
  return {
    ...pod,
    metadata: { ...pod.metadata, labels },
    spec: {
      ...spec,
      volumes: [
        { name: 'cfg', configMap: { name: 'settings', items: [{ key: 'a', path: 'a.txt', mode: 0o600 }] } },
        { name: 'tls', secret: { secretName: 'web-tls', defaultMode: 0o400 } },
        {
          name: 'info',
          downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
        },
      ],
      containers: spec.containers.map((c) => ({
        ...c,
        volumeMounts: [
          { name: 'cfg', mountPath: '/cfg' },
          { name: 'tls', mountPath: '/tls' },
          { name: 'info', mountPath: '/info' },
        ],
      })),
    },
  };
}

async function scanTable(): Promise<string> {
  const env = testEnv();
  const { doc } = createDynamoDbClient({ endpoint: env.dynamodb.endpoint, region: env.dynamodb.region });
  const items: unknown[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: table().tableName, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return JSON.stringify(items);
}

describe('ECS provider: file volumes', () => {
  it("writes them through the volume writer; a Secret's bytes are in SSM only, never in a request, the table or a log line", async () => {
    const objects = new Objects();
    const lines: string[] = [];
    const f = fixture({ volumeSources: objects, logTo: { write: (line) => void lines.push(line) } });
    const ns = uniqueName('ecs-vol');
    const key = `-----BEGIN KEY-----${randomBytes(3000).toString('hex')}-----END KEY-----`;
    objects.configMaps.set(`${ns}/settings`, new Map([['a', Buffer.from('alpha')]]));
    objects.secrets.set(`${ns}/web-tls`, new Map([['tls.key', Buffer.from(key)]]));
    const pod = withVolumes(ecsPod(ns, 'web', [{ name: 'app', script: 'sleep infinity' }]));
    await f.provider.createPod(pod);
    const running = await f.until(async () => {
      const got = await f.provider.getPod(ns, 'web');
      return got?.status?.phase === 'Running' ? got : undefined;
    });
    assert.equal(running.status?.containerStatuses?.length, 1, 'the writer is not one of the pod containers');
    const [task] = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    const writer = task?.containers.find((c) => c.name === VOLUME_WRITER_NAME);
    assert.equal(writer?.lastStatus, 'STOPPED', 'the writer ran and exited');
    assert.equal(writer?.exitCode, 0);
    // What ECS's agent handed the writer: the key, whole, from its SSM parts.
    const parts = Object.keys(writer?.env ?? {})
      .filter((k) => /^SVK_1_0_\d+$/.test(k))
      .sort((a, b) => Number(a.split('_').pop()) - Number(b.split('_').pop()));
    assert.ok(parts.length >= 2, 'the key takes more than one parameter');
    assert.equal(Buffer.from(parts.map((p) => writer?.env[p]).join(''), 'base64').toString(), key);
    assert.equal(Buffer.from(writer?.env.SVK_0_0 ?? '', 'base64').toString(), 'alpha');
    assert.equal(Buffer.from(writer?.env.SVK_2_0 ?? '', 'base64').toString(), 'app="web"');
    const stored = [...f.aws.ssm.parameters.values()];
    assert.ok(stored.every((p) => p.type === 'SecureString' && p.value.length <= 4096));

    // The Secret's bytes (plain, base64, or a part of either) are in no ECS request, table item or log line.
    const forms = [key, key.slice(20, 60), Buffer.from(key).toString('base64').slice(100, 140)];
    const requests = JSON.stringify(f.aws.ecs.requests);
    assert.ok(requests.includes('RegisterTaskDefinition') && requests.includes('RunTask'));
    const tableText = await scanTable();
    assert.ok(tableText.includes(ns), 'the table holds the pod');
    const logText = lines.join('') + JSON.stringify(f.aws.logs);
    for (const form of forms) {
      assert.ok(!requests.includes(form), 'no Secret bytes in a task definition or RunTask request');
      assert.ok(!tableText.includes(form), 'no Secret bytes in the state table');
      assert.ok(!logText.includes(form), 'no Secret bytes in a log line');
    }

    // Deleted: the task stops and the parameters go with the pod.
    await f.provider.deletePod(pod);
    await f.until(async () => (await f.provider.getPod(ns, 'web')) === undefined);
    assert.equal(f.aws.ssm.parameters.size, 0, 'the parameters are deleted with the pod');
  });

  it('a missing mandatory ConfigMap: FailedMount, nothing created; once it exists the pod starts; a missing optional one is no matter', async () => {
    const objects = new Objects();
    const f = fixture({ volumeSources: objects });
    const ns = uniqueName('ecs-vol');
    objects.secrets.set(`${ns}/web-tls`, new Map([['tls.key', Buffer.from('k')]]));
    const pod = withVolumes(ecsPod(ns, 'web', [{ name: 'app', script: 'sleep infinity' }]));
    await assert.rejects(f.provider.createPod(pod), (err: unknown) => {
      assert.ok(isProviderWaiting(err));
      assert.equal(err.reason, 'FailedMount');
      assert.equal(err.message, 'MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found');
      return true;
    });
    assert.equal(f.aws.ecs.calls.RegisterTaskDefinition ?? 0, 0);
    assert.equal(f.aws.ecs.calls.RunTask ?? 0, 0);
    assert.equal(f.aws.ssm.parameters.size, 0);
    assert.equal(await f.provider.getPod(ns, 'web'), undefined, 'no record');

    objects.configMaps.set(`${ns}/settings`, new Map([['a', Buffer.from('alpha')]]));
    await f.provider.createPod(pod);
    await f.until(async () => (await f.provider.getPod(ns, 'web'))?.status?.phase === 'Running');

    const optional = ecsPod(ns, 'opt', [{ name: 'app', script: 'sleep infinity' }], {
      volumes: [{ name: 'cfg', configMap: { name: 'later', optional: true } }],
    });
    await f.provider.createPod(optional);
    await f.until(async () => (await f.provider.getPod(ns, 'opt'))?.status?.phase === 'Running');
  });

  it('an update (new labels) with a changed ConfigMap keeps the task and its files: Fargate writes them once', async () => {
    const objects = new Objects();
    const f = fixture({ volumeSources: objects });
    const ns = uniqueName('ecs-vol');
    objects.configMaps.set(`${ns}/settings`, new Map([['a', Buffer.from('alpha')]]));
    objects.secrets.set(`${ns}/web-tls`, new Map([['tls.key', Buffer.from('k')]]));
    const pod = withVolumes(ecsPod(ns, 'web', [{ name: 'app', script: 'sleep infinity' }]));
    await f.provider.createPod(pod);
    await f.until(async () => (await f.provider.getPod(ns, 'web'))?.status?.phase === 'Running');
    const reads = objects.reads;
    objects.configMaps.set(`${ns}/settings`, new Map([['a', Buffer.from('ALPHA')]]));
    objects.secrets.delete(`${ns}/web-tls`);
    const status = await f.provider.updatePod(withVolumes(pod, { app: 'web', tier: 'front' }));
    assert.equal(status?.phase, 'Running');
    assert.equal(objects.reads, reads, 'nothing read: the shape is the same');
    assert.equal(f.aws.ecs.tasksOf(pod.metadata?.uid ?? '').length, 1, 'the task is kept');
    assert.equal(f.aws.ecs.calls.StopTask ?? 0, 0);
  });
});
