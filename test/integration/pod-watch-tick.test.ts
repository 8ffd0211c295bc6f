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
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { PodWatchTick } from '../../lib/pod/watch/pod-watch-tick.ts';
import { bookmarkKey, WatchBookmarkStore } from '../../lib/pod/watch/watch-bookmark.ts';
import { tickFence } from '../../lib/tick/tick-slot.ts';
import { testEnv } from '../support/env.ts';
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
  await admin.core.createNode({ body: { metadata: { name: node } } });
  await admin.core.createNode({ body: { metadata: { name: otherNode } } });
});

after(async () => {
  await deleteTestNamespace(admin, namespace);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
  await admin.core.deleteNode({ name: otherNode }).catch(() => undefined);
});

async function createPod(name: string, on = node): Promise<string> {
  const pod = await admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        nodeName: on,
        automountServiceAccountToken: false,
        tolerations: [{ operator: 'Exists' }],
        containers: [{ name: 'c', image: 'registry.invalid/none:1' }],
      },
    },
  });
  return pod.metadata?.uid ?? '';
}

function published(bus: LocalEventBus): PodEventDetail[] {
  return bus.published.map((e) => e.detail as PodEventDetail);
}

/** The cluster's current resourceVersion: what a list without resourceVersion returns. */
async function currentRv(): Promise<bigint> {
  const list = await admin.core.listNamespacedConfigMap({ namespace: 'kube-system', limit: 1 });
  return BigInt(list.metadata?.resourceVersion ?? '0');
}

async function tickDeps(tableName: string, nodeName: string): Promise<Dependencies> {
  const config = loadConfig(functionEnv(tableName, { SVK_NODE_NAMES: nodeName, SVK_LOG_LEVEL: 'warn' }));
  return loadDependencies(config, { functionName: 'tick' });
}

/** One tick's drain, as the tick entry runs it: work time 6 s. */
function drain(part: PodWatchTick, deps: Dependencies, slot: number) {
  return part.run({
    stop: AbortSignal.timeout(6_000),
    halt: new AbortController().signal,
    log: deps.log,
    fence: tickFence(slot, 1),
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
    const part = new PodWatchTick(deps, createLocalBusPublisher(bus));
    const bookmarks = new WatchBookmarkStore(table, new DynamoDbLockStore(table));
    const a = await createPod('a');

    const [first] = await drain(part, deps, 100);
    assert.deepEqual(first?.relists, ['no-bookmark']);
    assert.deepEqual(
      published(bus).map((d) => [d.type, d.name, d.uid]),
      [['ADDED', 'a', a]],
    );
    assert.equal(first?.saved, true, 'saved after the list');
    assert.equal((await bookmarks.get(node))?.resourceVersion, first?.resourceVersion);

    const [idle] = await drain(part, deps, 101);
    assert.deepEqual(idle?.relists, []);
    assert.equal(idle?.published, 0);
    assert.equal(idle?.watches, 1, 'one watch request, ended on silence');

    const b = await createPod('b');
    await admin.core.deleteNamespacedPod({ namespace, name: 'a', gracePeriodSeconds: 0 });
    const [changed] = await drain(part, deps, 102);
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
    const fresh = new PodWatchTick(deps, createLocalBusPublisher(bus));
    const [resumed] = await drain(fresh, deps, 103);
    assert.deepEqual(resumed?.relists, []);
    assert.deepEqual(
      published(bus)
        .slice(before)
        .map((d) => [d.type, d.name, d.uid]),
      [['ADDED', 'c', c]],
    );
    assert.ok(b);
  });

  it('a tick that outlived its message cannot move the bookmark back behind a later tick', async () => {
    const { table } = await freshTable();
    const bookmarks = new WatchBookmarkStore(table, new DynamoDbLockStore(table));
    assert.equal(await bookmarks.saveForTick(node, '200', tickFence(10, 1)), true);
    assert.equal(
      await bookmarks.saveForTick(node, '150', tickFence(9, 3)),
      false,
      'an older slot, redelivered',
    );
    assert.equal(
      await bookmarks.saveForTick(node, '210', tickFence(10, 2)),
      true,
      'the same slot delivered again',
    );
    assert.equal((await bookmarks.get(node))?.resourceVersion, '210');
  });

  it('does not send the events pod-sync would skip: a status-only change moves the resourceVersion and announces nothing', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName } = await freshTable();
    const deps = await tickDeps(tableName, node);
    const bus = new LocalEventBus();
    const part = new PodWatchTick(deps, createLocalBusPublisher(bus));
    await drain(part, deps, 199);
    // Through the watch, not a list (a relist announces without hints): the watcher remembers it.
    await createPod('h');
    await drain(part, deps, 200);
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
    for (let slot = 201; slot < 210; slot++) {
      [changed] = await drain(part, deps, slot);
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

    const [moved] = await drain(new PodWatchTick(deps, createLocalBusPublisher(bus)), deps, 300);
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
    const [restored] = await drain(new PodWatchTick(deps, createLocalBusPublisher(bus)), deps, 301);
    assert.deepEqual(restored?.relists, ['ahead']);
    const now = await new WatchBookmarkStore(table, new DynamoDbLockStore(table)).get(otherNode);
    assert.ok(now && BigInt(now.resourceVersion) < BigInt(ahead), 'the bookmark is back within the cluster');
  });
});
