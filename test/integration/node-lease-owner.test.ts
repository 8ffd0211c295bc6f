/**
 * The owner reference of a node's Lease against the real API server, when
 * the Node is registered again by another writer (at the tick cadence the
 * reconciler may do it before the heartbeat notices): the lease names the
 * Node's current uid, never the uid of the deleted one, which would hand it
 * to the garbage collector again and again; and when the garbage collector
 * deleted the lease with its Node, the next renewal registers the Node again
 * first (the PUT names the deleted lease's uid, so it cannot create it back),
 * unless the renewal may not (degraded, or refused by the release gate): then
 * the lease is left missing and nothing is registered.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { isLeaseMissing, NODE_LEASE_NAMESPACE, NodeLease } from '../../lib/node/node-lease.ts';
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
const gone = uniqueName('lease-gone');
const left = uniqueName('lease-left');

after(async () => {
  await deleteNodeAndLease(admin, node);
  await deleteNodeAndLease(admin, gone);
  await deleteNodeAndLease(admin, left);
});

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

  it('registers the Node again when the garbage collector deleted the lease with its Node, and never puts it back owned by the deleted Node', async () => {
    const first = await admin.core.createNode({ body: { metadata: { name: gone } } });
    const registered: string[] = [];
    const lease = new NodeLease({
      kube: kubeletClients(),
      nodeName: gone,
      durationSeconds: 40,
      clock: systemClock,
      log: createLogger({ level: 'warn' }),
      beforeRecreate: async () => {
        const again = await admin.core.createNode({ body: { metadata: { name: gone } } });
        registered.push(again.metadata?.uid ?? '');
        lease.setNodeUid(again.metadata?.uid);
      },
    });
    lease.setNodeUid(first.metadata?.uid);
    assert.equal(await lease.renew(), true);
    assert.equal((await readLease(admin, gone))?.metadata?.ownerReferences?.[0]?.uid, first.metadata?.uid);

    await admin.core.deleteNode({ name: gone });
    await waitFor(async () => (await readLease(admin, gone)) === undefined, {
      timeoutMs: 30_000,
      what: 'the garbage collector to delete the lease with its Node',
    });

    // The renewal's PUT names the deleted lease's uid: Conflict, not a create (leases allow create on update).
    assert.equal(await lease.renew(), true);
    assert.equal(registered.length, 1, 'the Node registered again before the lease was recreated');
    const recreated = await readLease(admin, gone);
    assert.equal(recreated?.metadata?.ownerReferences?.[0]?.uid, registered[0], 'owned by the new Node');
    assert.equal(recreated?.metadata?.ownerReferences?.[0]?.kind, 'Node');
  });

  it('leaves a lease deleted with its Node missing when it may not recreate it: no Node registered, no lease created', async () => {
    const first = await admin.core.createNode({ body: { metadata: { name: left } } });
    let registrations = 0;
    const lease = new NodeLease({
      kube: kubeletClients(),
      nodeName: left,
      durationSeconds: 40,
      clock: systemClock,
      log: createLogger({ level: 'warn' }),
      beforeRecreate: async () => {
        registrations++;
      },
    });
    lease.setNodeUid(first.metadata?.uid);
    assert.equal(await lease.renew(), true);
    await admin.core.deleteNode({ name: left });
    await waitFor(async () => (await readLease(admin, left)) === undefined, {
      timeoutMs: 30_000,
      what: 'the garbage collector to delete the lease with its Node',
    });

    await assert.rejects(lease.renew(undefined, undefined, { recreate: false }), (err) =>
      isLeaseMissing(err),
    );
    assert.equal(registrations, 0, 'beforeRecreate not called');
    assert.equal(await readLease(admin, left), undefined, 'no lease created');
    assert.equal(await readNode(admin, left), undefined, 'no Node registered');
  });
});
