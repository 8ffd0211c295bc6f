/**
 * Secrets stay secret: `npm start` (every function, the local runtime, logs
 * at trace level) runs pods whose env comes from a Secret, one of them
 * refused by the provider and one with a missing key, and deletes them;
 * then neither the DynamoDB table nor anything the run wrote contains the
 * Secret's value, plain or base64.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { V1Pod } from '@kubernetes/client-node';
import { MOCK_FAIL_CREATE_ANNOTATION } from '../../lib/provider/mock/mock-pod-plan.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  uniqueName,
  waitFor,
} from '../support/kube.ts';
import {
  killNpmStart,
  type NpmStart,
  npmStartNodeReady,
  npmStartOnTestCluster,
  stopNpmStart,
} from '../support/npm-start.ts';

const env = testEnv();
const admin = adminClients(env);
const node = uniqueName('secrets');
const ns = uniqueName('secrets');
const table = uniqueName('svk-secrets');
const SECRET_VALUE = `s3cr3t-${randomBytes(12).toString('hex')}`;
const forms = [SECRET_VALUE, Buffer.from(SECRET_VALUE).toString('base64')];

let started: NpmStart | undefined;

before(async () => {
  await createTestNamespace(admin, ns);
  await admin.core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'db' }, stringData: { password: SECRET_VALUE } },
  });
});

after(async () => {
  killNpmStart(started);
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
});

function pod(name: string, options: { key?: string; annotations?: Record<string, string> } = {}): V1Pod {
  return {
    metadata: { name, ...(options.annotations ? { annotations: options.annotations } : {}) },
    spec: {
      nodeName: node,
      tolerations: [{ operator: 'Exists' }],
      containers: [
        {
          name: 'app',
          image: 'busybox',
          env: [
            {
              name: 'DB_PASSWORD',
              valueFrom: { secretKeyRef: { name: 'db', key: options.key ?? 'password' } },
            },
          ],
          envFrom: [{ secretRef: { name: 'db' } }],
        },
      ],
    },
  };
}

describe('Secret values', () => {
  it('appear neither in the table nor in any log line after a run with Secret env', {
    timeout: 6 * 60_000,
  }, async () => {
    started = npmStartOnTestCluster(env, { table, node, env: { SVK_LOG_LEVEL: 'trace' } });
    const run = started;
    await npmStartNodeReady(admin, run, node);

    await admin.core.createNamespacedPod({ namespace: ns, body: pod('uses-secret') });
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: pod('refused', { annotations: { [MOCK_FAIL_CREATE_ANNOTATION]: 'no capacity' } }),
    });
    await admin.core.createNamespacedPod({ namespace: ns, body: pod('missing-key', { key: 'nope' }) });
    const phase = async (name: string) =>
      (await admin.core.readNamespacedPod({ namespace: ns, name })).status?.phase;
    await waitFor(async () => (await phase('uses-secret')) === 'Running', {
      timeoutMs: 90_000,
      what: 'the pod with Secret env Running (its env resolved)',
    });
    const events = async (name: string) =>
      (await admin.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` }))
        .items;
    await waitFor(async () => (await events('refused')).some((e) => e.reason === 'ProviderCreateFailed'), {
      timeoutMs: 60_000,
      what: 'the refused create recorded',
    });
    await waitFor(async () => (await events('missing-key')).length > 0, {
      timeoutMs: 60_000,
      what: 'the missing Secret key recorded',
    });
    for (const name of ['uses-secret', 'refused', 'missing-key'])
      await admin.core.deleteNamespacedPod({ namespace: ns, name });
    await waitFor(async () => (await admin.core.listNamespacedPod({ namespace: ns })).items.length === 0, {
      timeoutMs: 120_000,
      what: 'the pods gone',
    });

    assert.equal(await stopNpmStart(run), 0);

    const { doc } = createDynamoDbClient({ endpoint: env.dynamodb.endpoint, region: env.dynamodb.region });
    const items: unknown[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    const stored = JSON.stringify(items);
    const logs = [...run.stdout, ...run.stderr].join('\n');
    assert.ok(
      items.length > 0 && logs.includes('uses-secret'),
      'the run wrote state and logged about the pods',
    );
    for (const form of forms) {
      assert.ok(
        !stored.includes(form),
        `the table holds the Secret's value (${form === SECRET_VALUE ? 'plain' : 'base64'})`,
      );
      assert.ok(
        !logs.includes(form),
        `a log line holds the Secret's value (${form === SECRET_VALUE ? 'plain' : 'base64'})`,
      );
    }
  });
});
