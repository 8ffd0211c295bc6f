/**
 * A node whose Node does not exist yet, against the real API server: the
 * tick's renewal finds it missing once and does not read it again while the
 * registration (the tick's node work) is still to come, and the
 * registration does not read it a second time. With a thousand new nodes,
 * a read per node and tick filled every tick before any node registered.
 * The provider is a plain object (the provider interface, not a fake of
 * Kubernetes).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { buildNodeController } from '../../lib/app/dependencies.ts';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { createLogger } from '../../lib/log/logger.ts';
import type { NodeProvider } from '../../lib/provider/provider.ts';
import {
  adminClients,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  kubeletClients,
  readLease,
  readNode,
  uniqueName,
} from '../support/kube.ts';

const admin = adminClients();
const node = uniqueName('missing');

after(async () => {
  await deleteNodeAndLease(admin, node);
});

const provider: NodeProvider = {
  name: 'plain',
  ping: async () => {},
  nodeStatus: async () => ({
    capacity: { cpu: '2', memory: '4Gi', pods: '10' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'ProviderReady', message: 'ready' }],
    nodeInfo: {
      kubeletVersion: 'v1.20.2',
      operatingSystem: 'linux',
      architecture: 'amd64',
      osImage: 'plain',
    },
  }),
};

describe('a node not registered yet', () => {
  it('is read once by the renewals, then registered by the tick without another read', async () => {
    const { name: tableName } = await freshTable();
    const config = loadConfig(functionEnv(tableName, { SVK_NODE_NAMES: node }));
    const controller = buildNodeController(
      { kube: kubeletClients(), nodeProvider: provider, clock: systemClock },
      { name: node, settings: config.node, log: createLogger({ level: 'warn' }) },
    );

    const first = await controller.renewLease();
    assert.equal(first.leaseRenewed, false, 'no Node, no lease to renew');
    assert.equal(first.requests, 1, 'one read of the Node');
    const second = await controller.renewLease();
    assert.equal(second.leaseRenewed, false);
    assert.equal(second.requests, 1, 'not read again: the registration is the tick node work');

    const tick = await controller.tick(undefined, second);
    // POST node, GET lease (404), POST lease, status apply: no second read of the Node.
    assert.equal(tick.requests - second.requests, 4, `requests of the registration: ${JSON.stringify(tick)}`);
    const registered = await readNode(admin, node);
    assert.ok(registered?.metadata?.uid, 'the Node is registered');
    const lease = await readLease(admin, node);
    assert.equal(
      lease?.metadata?.ownerReferences?.[0]?.uid,
      registered.metadata.uid,
      'its lease owned by it',
    );

    const renewed = await controller.renewLease();
    assert.equal(renewed.leaseRenewed, true);
    assert.equal(renewed.requests - tick.requests, 1, 'from now on one request a renewal');
  });
});
