/**
 * pod-watch as a tick part against the real API server and DynamoDB Local,
 * publishing onto the in-process bus: each `run` is one tick's drain of every
 * node. Pods are created by the admin bound (spec.nodeName) to a Node object
 * nothing runs.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type Dependencies, loadDependencies } from '../../lib/app/dependencies.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import type { PodEventDetail } from '../../lib/events/pod-event.ts';
import { LocalEventBus } from '../../lib/local/event-bus.ts';
import { createLocalBusPublisher } from '../../lib/local/local-bus-publisher.ts';
import { DynamoDbLockStore } from '../../lib/lock/dynamodb-lock-store.ts';
import { LockLostError, LockManager } from '../../lib/lock/lock.ts';
import { podWatchLockName, TICK_CHAIN_OWNER } from '../../lib/lock/lock-names.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { PodWatchTick } from '../../lib/pod/watch/pod-watch-tick.ts';
import { bookmarkKey, WatchBookmarkStore } from '../../lib/pod/watch/watch-bookmark.ts';
import { testEnv } from '../support/env.ts';
import { clusterResourceVersion, createIdleNode, createIdlePod } from '../support/idle-pods.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  uniqueName,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const namespace = uniqueName('pw-tick');
const node = uniqueName('pw-tick');
/** The node of the cluster-identity test, apart so that its lists hold its own pods only. */
const otherNode = uniqueName('pw-tick-id');

before(async () => {
  await createTestNamespace(admin, namespace);
  await createIdleNode(admin, node);
  await createIdleNode(admin, otherNode);
});

after(async () => {
  await deleteTestNamespace(admin, namespace);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
  await admin.core.deleteNode({ name: otherNode }).catch(() => undefined);
});

async function createPod(name: string, on = node): Promise<string> {
  const pod = await createIdlePod(admin, namespace, on, name);
  return pod.metadata?.uid ?? '';
}

function published(bus: LocalEventBus): PodEventDetail[] {
  return bus.published.map((e) => e.detail as PodEventDetail);
}

function currentRv(): Promise<bigint> {
  return clusterResourceVersion(admin);
}

async function tickDeps(tableName: string, nodeName: string): Promise<Dependencies> {
  const config = loadConfig(functionEnv(tableName, { SVK_NODE_NAMES: nodeName, SVK_LOG_LEVEL: 'warn' }));
  return loadDependencies(config, { functionName: 'tick' });
}

/** The chain's lock TTL as the tick parts set it at the default tick period (3 periods of 10 s). */
const LOCK_TTL_MS = 30_000;

/** The pod-watch part of one sandbox of the chain. */
function watchTick(deps: Dependencies, bus: LocalEventBus): PodWatchTick {
  return new PodWatchTick(deps, createLocalBusPublisher(bus), { lockTtlMs: LOCK_TTL_MS });
}

/** One tick's drain, as the tick entry runs it: work time 6 s. */
function drain(part: PodWatchTick, deps: Dependencies) {
  return part.run({
    stop: AbortSignal.timeout(6_000),
    halt: new AbortController().signal,
    log: deps.log,
  });
}

describe('pod-watch as a tick part', () => {
  it('lists once, then each drain publishes what changed and ends on silence; a new sandbox resumes from the bookmark', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable();
    const config = loadConfig(functionEnv(tableName, { SVK_NODE_NAMES: node, SVK_LOG_LEVEL: 'warn' }));
    const deps = await loadDependencies(config, { functionName: 'tick' });
    const bus = new LocalEventBus();
    const part = watchTick(deps, bus);
    const bookmarks = new WatchBookmarkStore(table, new DynamoDbLockStore(table));
    const a = await createPod('a');

    const [first] = await drain(part, deps);
    assert.deepEqual(first?.relists, ['no-bookmark']);
    assert.deepEqual(
      published(bus).map((d) => [d.type, d.name, d.uid]),
      [['ADDED', 'a', a]],
    );
    assert.equal(first?.saved, true, 'saved after the list');
    assert.equal((await bookmarks.get(node))?.resourceVersion, first?.resourceVersion);

    const [idle] = await drain(part, deps);
    assert.deepEqual(idle?.relists, []);
    assert.equal(idle?.published, 0);
    assert.equal(idle?.watches, 1, 'one watch request, ended on silence');
    assert.equal(idle?.epoch, (first?.epoch ?? 0) + 1, "each tick takes its turn on the node's lock");

    const b = await createPod('b');
    await admin.core.deleteNamespacedPod({ namespace, name: 'a', gracePeriodSeconds: 0 });
    const [changed] = await drain(part, deps);
    assert.ok((changed?.published ?? 0) >= 2, JSON.stringify(changed));
    const names = published(bus)
      .slice(1)
      .map((d) => `${d.type} ${d.name}`);
    assert.ok(names.includes('ADDED b'), names.join(', '));
    assert.ok(names.includes('DELETED a'), names.join(', '));
    assert.equal(changed?.saved, true, 'saved at once after events');

    // A new sandbox (a cold start) resumes from the stored bookmark: no relist, nothing published twice.
    const c = await createPod('c');
    const before = bus.published.length;
    const fresh = watchTick(deps, bus);
    const [resumed] = await drain(fresh, deps);
    assert.deepEqual(resumed?.relists, []);
    assert.equal(resumed?.epoch, (changed?.epoch ?? 0) + 1, 'a new sandbox of the chain waits for no TTL');
    assert.deepEqual(
      published(bus)
        .slice(before)
        .map((d) => [d.type, d.name, d.uid]),
      [['ADDED', 'c', c]],
    );
    assert.ok(b);
  });

  it('a tick that outlived its message cannot move the bookmark back behind a later tick', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable();
    const deps = await tickDeps(tableName, node);
    const lockStore = new DynamoDbLockStore(table);
    const bookmarks = new WatchBookmarkStore(table, lockStore);
    await createPod('s');
    // The redelivery of the message, in another sandbox, runs its whole drain while the first
    // tick is still publishing its list: the first tick has outlived its message.
    const bus = new LocalEventBus();
    const later = watchTick(deps, bus);
    let redelivered: Awaited<ReturnType<typeof drain>>[number] | undefined;
    const busPublisher = createLocalBusPublisher(bus);
    const outlived = new PodWatchTick(
      deps,
      {
        publish: async (details, options) => {
          redelivered ??= (await drain(later, deps))[0];
          await busPublisher.publish(details, options);
        },
      },
      { lockTtlMs: LOCK_TTL_MS },
    );
    const [stale] = await drain(outlived, deps);
    assert.ok(redelivered && stale, 'both ticks drained the node');
    assert.equal(redelivered.saved, true, JSON.stringify(redelivered));
    assert.equal(redelivered.epoch, (stale.epoch ?? 0) + 1, 'the later tick took the next turn');
    assert.equal(stale.saved, false, 'the stale tick is fenced out');
    assert.equal((await bookmarks.get(node))?.resourceVersion, redelivered.resourceVersion);
    assert.equal((await bookmarks.get(node))?.epoch, redelivered.epoch);

    // The same at the store: a save under an older turn is refused and writes nothing.
    const chain = () => new LockManager({ store: lockStore, owner: TICK_CHAIN_OWNER, ttlMs: LOCK_TTL_MS });
    const older = await chain().advance(podWatchLockName(node));
    const newer = await chain().advance(podWatchLockName(node));
    assert.ok(older && newer);
    assert.equal(newer.epoch, older.epoch + 1);
    await bookmarks.save(node, '200', newer);
    await assert.rejects(bookmarks.save(node, '150', older), LockLostError);
    assert.equal((await bookmarks.get(node))?.resourceVersion, '200');
    await bookmarks.save(node, '210', newer);
    assert.equal((await bookmarks.get(node))?.resourceVersion, '210');
  });

  it("while a continuous watcher holds the node's lock, the ticks leave the node to it; once it hands over, the next tick drains at once", {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable();
    const deps = await tickDeps(tableName, node);
    const lockStore = new DynamoDbLockStore(table);
    const watcher = new LockManager({ store: lockStore, owner: 'continuous-watcher', ttlMs: 15_000 });
    const held = await watcher.tryAcquire(podWatchLockName(node));
    assert.ok(held);
    const bus = new LocalEventBus();
    const part = watchTick(deps, bus);
    const [left] = await drain(part, deps);
    assert.equal(left?.heldElsewhere, true, JSON.stringify(left));
    assert.equal(left?.watches, 0);
    assert.equal(bus.published.length, 0, 'nothing published');
    assert.equal(await new WatchBookmarkStore(table, lockStore).get(node), undefined, 'nothing saved');
    assert.equal((await lockStore.get(podWatchLockName(node)))?.owner, 'continuous-watcher');

    await watcher.release(held);
    const [taken] = await drain(part, deps);
    assert.equal(taken?.heldElsewhere, undefined);
    assert.equal(taken?.epoch, held.epoch + 1);
    assert.deepEqual(taken?.relists, ['no-bookmark']);
    assert.equal(taken?.saved, true);
    assert.equal((await lockStore.get(podWatchLockName(node)))?.owner, TICK_CHAIN_OWNER);
  });

  it('does not send the events pod-sync would skip: a status-only change moves the resourceVersion and announces nothing', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName } = await freshTable();
    const deps = await tickDeps(tableName, node);
    const bus = new LocalEventBus();
    const part = watchTick(deps, bus);
    await drain(part, deps);
    // Through the watch, not a list (a relist announces without hints): the watcher remembers it.
    await createPod('h');
    await drain(part, deps);
    const before = bus.published.length;
    const patched = await admin.core.patchNamespacedPodStatus(
      {
        namespace,
        name: 'h',
        body: { status: { conditions: [{ type: 'example.com/Probe', status: 'True' }] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const patchedRv = BigInt(patched.metadata?.resourceVersion ?? '0');
    let changed: Awaited<ReturnType<typeof drain>>[number] | undefined;
    for (let i = 0; i < 9; i++) {
      [changed] = await drain(part, deps);
      if (BigInt(changed?.resourceVersion ?? '0') >= patchedRv) break;
    }
    assert.ok(BigInt(changed?.resourceVersion ?? '0') >= patchedRv, JSON.stringify(changed));
    const modified = bus.published
      .slice(before)
      .filter(
        (e) => (e.detail as PodEventDetail).name === 'h' && (e.detail as PodEventDetail).type === 'MODIFIED',
      );
    assert.deepEqual(modified, [], 'the status change was not announced');
  });

  it("a cold start relists when the bookmark is of another cluster (forgetting that cluster's known pods, no GONE) or ahead of this one; the bookmark records the cluster", {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable();
    const deps = await tickDeps(tableName, otherNode);
    const bus = new LocalEventBus();
    const knownPods = new KnownPodStore(table);
    // State of another cluster: its bookmark and a pod of it this cluster has never had.
    await table.put({
      ...bookmarkKey(otherNode),
      node: otherNode,
      resourceVersion: '5',
      epoch: 0,
      clusterUid: 'uid-of-another-cluster',
      updatedAt: new Date().toISOString(),
    });
    await knownPods.put(
      { node: otherNode, namespace: 'elsewhere', name: 'ghost', uid: 'ghost-uid' },
      undefined,
    );
    const d = await createPod('d', otherNode);

    const [moved] = await drain(watchTick(deps, bus), deps);
    assert.deepEqual(moved?.relists, ['other-cluster']);
    const names = published(bus).map((e) => [e.type, e.name, e.uid]);
    assert.deepEqual(names, [['ADDED', 'd', d]], "only this cluster's pod is announced");
    assert.equal(await knownPods.get(otherNode, 'elsewhere', 'ghost'), undefined, 'the ghost is forgotten');
    const uid = (await admin.core.readNamespace({ name: 'kube-system' })).metadata?.uid;
    const saved = await new WatchBookmarkStore(table, new DynamoDbLockStore(table)).get(otherNode);
    assert.equal(saved?.clusterUid, uid, 'the bookmark records this cluster');
    assert.equal(saved?.resourceVersion, moved?.resourceVersion);

    // What an etcd restore from an older backup leaves: this cluster, and a bookmark it has not reached.
    const ahead = ((await currentRv()) + 100_000n).toString();
    await table.put({ ...bookmarkKey(otherNode), ...saved, resourceVersion: ahead, tickFence: 0 });
    const [restored] = await drain(watchTick(deps, bus), deps);
    assert.deepEqual(restored?.relists, ['ahead']);
    const now = await new WatchBookmarkStore(table, new DynamoDbLockStore(table)).get(otherNode);
    assert.ok(now && BigInt(now.resourceVersion) < BigInt(ahead), 'the bookmark is back within the cluster');
  });
});
