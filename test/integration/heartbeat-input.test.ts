import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { LocalLambdaRuntime, scheduledEvent } from '../../lib/local/lambda-runtime.ts';
import { lockKey } from '../../lib/lock/dynamodb-lock-store.ts';
import { adminClients, freshTable, functionEnv, readNode, uniqueName } from '../support/kube.ts';

const admin = adminClients();

describe('heartbeat with bad input writes nothing', () => {
  it('fails fast on invalid configuration, naming every bad variable', async () => {
    const { name: tableName, table } = await freshTable();
    const node = uniqueName('badcfg');
    const runtime = new LocalLambdaRuntime();
    runtime.register({
      name: 'heartbeat',
      timeoutMs: 10_000,
      handler: createHeartbeatHandler(
        functionEnv(tableName, {
          SVK_NODE_NAMES: `${node},Bad_Node`,
          SVK_NODE_LEASE_DURATION_SECONDS: '20',
          SVK_NODE_CAPACITY: 'cpu=four,pods=10',
        }),
      ),
    });
    const result = await runtime.invoke('heartbeat', scheduledEvent()).done;
    assert.equal(result.status, 'error');
    const message = String((result as { error: Error }).error.message);
    assert.match(message, /SVK_NODE_NAMES "Bad_Node" is not a valid node name/);
    assert.match(message, /SVK_NODE_LEASE_DURATION_SECONDS \(20\) must exceed 3 renew intervals/);
    assert.match(message, /SVK_NODE_CAPACITY "cpu=four" is not a resource quantity/);
    assert.equal(await readNode(admin, node), undefined, 'no Node registered');
    assert.equal(await table.get(lockKey('heartbeat')), undefined, 'no lock taken');
  });

  it('rejects an event that is not a scheduled event', async () => {
    const { name: tableName, table } = await freshTable();
    const node = uniqueName('badevt');
    const runtime = new LocalLambdaRuntime();
    runtime.register({
      name: 'heartbeat',
      timeoutMs: 10_000,
      handler: createHeartbeatHandler(functionEnv(tableName, { SVK_NODE_NAMES: node })),
    });
    const result = await runtime.invoke('heartbeat', {
      ...scheduledEvent(),
      source: 'someone.else',
      detail: 'x',
    }).done;
    assert.equal(result.status, 'error');
    const message = String((result as { error: Error }).error.message);
    assert.match(message, /not an EventBridge scheduled event/);
    assert.match(message, /source/);
    assert.match(message, /detail/);
    assert.equal(await readNode(admin, node), undefined, 'no Node registered');
    assert.equal(await table.get(lockKey('heartbeat')), undefined, 'no lock taken');
  });
});
