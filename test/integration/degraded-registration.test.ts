/**
 * A Node deleted while DynamoDB cannot be reached: the whole deployment
 * (every function through the local runtime) at each cadence against the
 * real control plane (the garbage collector deletes the Node's Lease with
 * it) and a DynamoDB Local of its own, frozen (SIGSTOP). Degraded, the
 * heartbeat renews the Leases of the Nodes that exist and registers none:
 * the deleted Node stays gone through several degraded rounds, and is
 * registered again, Ready, once DynamoDB answers (SIGCONT) and the release
 * gate lets the heartbeat act.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Cadence } from '../../lib/local/cadence.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../lib/local/dynamodb-local.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { STATE_STORE_CONDITION } from '../../lib/node/state-store-condition.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { createTable } from '../../lib/state/table-definition.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  deleteNodeAndLease,
  functionEnv,
  readLease,
  readNode,
  readyAndUntainted,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
/** Degraded rounds after the Lease was gone in which the Node must stay gone. */
const DEGRADED_ROUNDS = 3;

for (const cadence of ['tick', 'continuous'] as const satisfies readonly Cadence[]) {
  describeDeletion(cadence);
}

/**
 * Counts the heartbeat's degraded rounds as invocations report them: a tick
 * whose gate found the table unreachable, or (continuous) a heartbeat
 * invocation's degraded rounds.
 */
function degradedRounds(name: string, result: unknown): number {
  if (typeof result !== 'object' || result === null) return 0;
  if (name === 'tick' && 'gate' in result) return result.gate === 'unreachable' ? 1 : 0;
  if (name === 'heartbeat' && 'degradedRounds' in result && typeof result.degradedRounds === 'number') {
    return result.degradedRounds;
  }
  return 0;
}

function describeDeletion(cadence: Cadence): void {
  const node = uniqueName(`degraded-reg-${cadence}`);
  const tableName = `svk-degraded-reg-${cadence}`;

  describe(`a Node deleted during a DynamoDB outage, ${cadence} cadence`, () => {
    let dynamo: DynamoDbLocal | undefined;
    let frozen = false;
    let deployment: LocalDeployment | undefined;

    before(async () => {
      dynamo = await startDynamoDbLocal({ inMemory: true });
      const { client } = createDynamoDbClient({ endpoint: dynamo.endpoint, region: env.dynamodb.region });
      await createTable(client, tableName);
    });

    after(async () => {
      if (dynamo && frozen) process.kill(dynamo.pid, 'SIGCONT');
      await deployment?.stop({ abortRunning: true });
      await deleteNodeAndLease(admin, node);
      await dynamo?.stop();
    });

    it('is not registered again while degraded, and is registered again once DynamoDB answers', {
      timeout: 10 * 60_000,
    }, async (t) => {
      assert.ok(dynamo);
      const db = dynamo;
      /** Degraded rounds reported so far. */
      let degraded = 0;
      deployment = new LocalDeployment({
        cadence,
        env: functionEnv(tableName, {
          SVK_NODE_NAMES: node,
          SVK_DYNAMODB_ENDPOINT: db.endpoint,
          SVK_LOCK_TTL_SECONDS: '6',
          SVK_LOCK_POLL_MS: '500',
        }),
        // The continuous functions end every 40 s, so their degraded rounds are reported while the outage lasts.
        rateMs: 20_000,
        timeoutMs: 40_000,
        onResult: (invocation, result) => {
          if (result.status === 'ok') degraded += degradedRounds(invocation.functionName, result.result);
        },
      });
      deployment.start();
      await waitFor(async () => readyAndUntainted(await readNode(admin, node)), {
        timeoutMs: 120_000,
        what: `${node} Ready`,
      });
      const before = await readNode(admin, node);
      const oldUid = before?.metadata?.uid;
      await waitFor(
        async () => (await readLease(admin, node))?.metadata?.ownerReferences?.[0]?.uid === oldUid,
        { timeoutMs: 60_000, what: 'the lease owned by the node' },
      );

      process.kill(db.pid, 'SIGSTOP');
      frozen = true;
      await waitFor(
        async () =>
          (await readNode(admin, node))?.status?.conditions?.find((c) => c.type === STATE_STORE_CONDITION)
            ?.status === 'True',
        { timeoutMs: 120_000, what: `${STATE_STORE_CONDITION} True (the heartbeat degraded)` },
      );

      await admin.core.deleteNode({ name: node });
      await waitFor(async () => (await readLease(admin, node)) === undefined, {
        timeoutMs: 60_000,
        what: 'the garbage collector to delete the lease with its Node',
      });
      // The Node is watched from here: not one sample may find it while the outage lasts.
      const seen: string[] = [];
      const from = degraded;
      await waitFor(
        async () => {
          const n = await readNode(admin, node);
          if (n) seen.push(n.metadata?.uid ?? '');
          return degraded - from >= DEGRADED_ROUNDS;
        },
        {
          timeoutMs: 4 * 60_000,
          intervalMs: 500,
          what: `${DEGRADED_ROUNDS} degraded rounds after the deletion`,
        },
      );
      t.diagnostic(`${degraded - from} degraded rounds after the lease was gone`);
      assert.deepEqual(seen, [], 'no degraded round registered the deleted Node again');
      assert.equal(await readNode(admin, node), undefined, 'still gone');
      assert.equal(await readLease(admin, node), undefined, 'and no lease created for it');

      process.kill(db.pid, 'SIGCONT');
      frozen = false;
      const back = await waitFor(
        async () => {
          const n = await readNode(admin, node);
          return n?.metadata?.uid && n.metadata.uid !== oldUid && readyStatus(n) === 'True' ? n : undefined;
        },
        { timeoutMs: 180_000, what: 'the Node registered again and Ready once DynamoDB answers' },
      );
      await waitFor(
        async () =>
          (await readLease(admin, node))?.metadata?.ownerReferences?.[0]?.uid === back.metadata?.uid,
        { timeoutMs: 60_000, what: 'the lease owned by the new Node' },
      );
    });
  });
}
