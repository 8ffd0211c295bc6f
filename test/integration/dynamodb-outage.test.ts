/**
 * Liveness without DynamoDB: the whole deployment (every function through
 * the local runtime) at each cadence of serverless.yml (the tick chain, its
 * default, and the continuous functions) against the real control plane
 * and a DynamoDB Local of its own, which is frozen (SIGSTOP) for 60 s
 * while the node is Ready and a pod is created, then thawed (SIGCONT).
 * Sampled every second, Ready never leaves True (a NotReady node gets the
 * unreachable taint, and its pods are evicted 300 s later); the pod runs
 * within 2 minutes of the outage's end, created once by the provider.
 *
 * SVK_TEST_LONG=1 freezes DynamoDB for 10 minutes instead.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import type { Cadence } from '../../lib/local/cadence.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../lib/local/dynamodb-local.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { STATE_STORE_CONDITION } from '../../lib/node/state-store-condition.ts';
import { mockPodRecord } from '../../lib/provider/mock/mock-pods.ts';
import { StateTable } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { createTable } from '../../lib/state/table-definition.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  functionEnv,
  readNode,
  readyAndUntainted,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const LONG = process.env.SVK_TEST_LONG === '1';
const FREEZE_MS = LONG ? 10 * 60_000 : 60_000;
const env = testEnv();
const admin = adminClients(env);

interface Sample {
  at: number;
  ready: string | undefined;
  taints: string[];
  /** Our StateStoreUnavailable condition's status. */
  degraded: string | undefined;
}

const degradedOf = (n: V1Node | undefined) =>
  n?.status?.conditions?.find((c) => c.type === STATE_STORE_CONDITION)?.status;

function sample(n: V1Node | undefined, at: number): Sample {
  return {
    at,
    ready: readyStatus(n),
    taints: (n?.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`),
    degraded: degradedOf(n),
  };
}

for (const cadence of ['tick', 'continuous'] as const satisfies readonly Cadence[]) {
  describeOutage(cadence);
}

function describeOutage(cadence: Cadence): void {
  const node = uniqueName(`ddb-outage-${cadence}`);
  const ns = uniqueName(`ddb-outage-${cadence}`);
  const tableName = `svk-outage-${cadence}`;

  describe(`a DynamoDB outage, ${cadence} cadence`, () => {
    let dynamo: DynamoDbLocal | undefined;
    let frozen = false;
    let deployment: LocalDeployment | undefined;

    before(async () => {
      await createTestNamespace(admin, ns);
      dynamo = await startDynamoDbLocal({ inMemory: true });
      const { client } = createDynamoDbClient({ endpoint: dynamo.endpoint, region: env.dynamodb.region });
      await createTable(client, tableName);
    });

    after(async () => {
      if (dynamo && frozen) process.kill(dynamo.pid, 'SIGCONT');
      await deployment?.stop({ abortRunning: true });
      await deleteTestNamespace(admin, ns);
      await deleteNodeAndLease(admin, node);
      await dynamo?.stop();
    });

    it(`keeps the node Ready through ${FREEZE_MS / 60_000} min of DynamoDB frozen; a pod created meanwhile runs after, once`, {
      timeout: FREEZE_MS + 8 * 60_000,
    }, async (t) => {
      assert.ok(dynamo);
      const db = dynamo;
      deployment = new LocalDeployment({
        cadence,
        env: functionEnv(tableName, {
          SVK_NODE_NAMES: node,
          SVK_DYNAMODB_ENDPOINT: db.endpoint,
        }),
      });
      deployment.start();
      await waitFor(async () => readyAndUntainted(await readNode(admin, node)), {
        timeoutMs: 90_000,
        what: `${node} Ready`,
      });

      const samples: Sample[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const at = Date.now();
          samples.push(sample(await readNode(admin, node).catch(() => undefined), at));
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_000 - (Date.now() - at))));
        }
      })();

      process.kill(db.pid, 'SIGSTOP');
      frozen = true;
      const frozenAt = Date.now();
      await admin.core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name: 'during-outage' },
          spec: {
            nodeSelector: { 'kubernetes.io/hostname': node },
            tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
            containers: [{ name: 'app', image: 'busybox' }],
          },
        },
      });
      // The outage itself: the scenario is DynamoDB unreachable for this long.
      await new Promise((resolve) => setTimeout(resolve, FREEZE_MS - (Date.now() - frozenAt)));
      process.kill(db.pid, 'SIGCONT');
      frozen = false;
      const thawedAt = Date.now();

      await waitFor(
        async () =>
          (await admin.core.readNamespacedPod({ namespace: ns, name: 'during-outage' })).status?.phase ===
          'Running',
        { timeoutMs: 120_000, what: 'the pod created during the outage Running within 2 minutes of its end' },
      );
      t.diagnostic(`pod Running ${((Date.now() - thawedAt) / 1000).toFixed(1)} s after the outage ended`);
      // The node through the return to the lock: the holder says so on the node.
      await waitFor(async () => degradedOf(await readNode(admin, node)) === 'False', {
        timeoutMs: 60_000,
        what: `${STATE_STORE_CONDITION} False again`,
      });
      sampling = false;
      await sampler;

      const { doc } = createDynamoDbClient({ endpoint: db.endpoint, region: env.dynamodb.region });
      const record = await mockPodRecord(new StateTable(doc, tableName), ns, 'during-outage');
      assert.equal(record?.creates, 1, 'created once in the provider');
      const notReady = samples.filter((s) => s.ready !== 'True');
      t.diagnostic(`${samples.length} samples, ${notReady.length} not Ready`);
      assert.ok(samples.length >= FREEZE_MS / 1_000 - 5, `sampled ${samples.length} times`);
      assert.deepEqual(notReady, [], 'Ready never left True');
      assert.ok(
        samples.some((s) => s.at > frozenAt && s.at < thawedAt && s.degraded === 'True'),
        `the node said it was degraded during the outage (${STATE_STORE_CONDITION})`,
      );
      assert.notEqual(
        samples[0]?.degraded,
        'True',
        'and not before it (False again after it: waited for above)',
      );
      assert.deepEqual(
        samples.filter((s) => s.taints.some((x) => x.startsWith('node.kubernetes.io/unreachable'))),
        [],
        'never tainted unreachable',
      );
    });
  });
}
