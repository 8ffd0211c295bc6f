/**
 * The owner reference of a node's Lease against the real API server, when
 * the Node is registered again by another writer (at the tick cadence the
 * reconciler may do it before the heartbeat notices): the lease names the
 * Node's current uid, never the uid of the deleted one, which would hand it
 * to the garbage collector again and again.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { NODE_LEASE_NAMESPACE, NodeLease } from '../../lib/node/node-lease.ts';
import {
  adminClients,
  deleteNodeAndLease,
  kubeletClients,
  readLease,
  readNode,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const admin = adminClients();
const node = uniqueName('lease-owner');

after(() => deleteNodeAndLease(admin, node));

describe('a node lease', () => {
  it('follows the Node registered again by another writer: a renewal keeps the current uid as owner', async () => {
    const first = await admin.core.createNode({ body: { metadata: { name: node } } });
    const lease = new NodeLease({
      kube: kubeletClients(),
      nodeName: node,
      durationSeconds: 40,
      clock: systemClock,
      log: createLogger({ level: 'warn' }),
    });
    lease.setNodeUid(first.metadata?.uid);
    assert.equal(await lease.renew(), true);
    assert.equal((await readLease(admin, node))?.metadata?.ownerReferences?.[0]?.uid, first.metadata?.uid);

    // Another writer registers the Node again and points the lease at it (orphaned, so the
    // garbage collector leaves the lease to this test).
    await admin.core.deleteNode({ name: node, propagationPolicy: 'Orphan' });
    // Orphaning goes through a finalizer: the Node is gone once the garbage collector removed it.
    await waitFor(async () => (await readNode(admin, node)) === undefined, {
      timeoutMs: 30_000,
      what: 'the Node gone',
    });
    const second = await admin.core.createNode({ body: { metadata: { name: node } } });
    const stored = await readLease(admin, node);
    assert.ok(stored?.metadata && second.metadata?.uid);
    stored.metadata.ownerReferences = [
      { apiVersion: 'v1', kind: 'Node', name: node, uid: second.metadata.uid },
    ];
    await admin.coordination.replaceNamespacedLease({
      name: node,
      namespace: NODE_LEASE_NAMESPACE,
      body: stored,
    });

    // This lease still knows the first uid, and its copy of the lease is stale (a conflict, then a read).
    assert.equal(await lease.renew(), true);
    const renewed = await readLease(admin, node);
    assert.equal(
      renewed?.metadata?.ownerReferences?.[0]?.uid,
      second.metadata.uid,
      'owned by the current Node',
    );
    assert.notEqual(renewed?.metadata?.resourceVersion, stored.metadata.resourceVersion, 'renewed');
  });
});
