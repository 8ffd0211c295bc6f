/**
 * pod-watch when the state in DynamoDB comes from another cluster, or from
 * the same cluster before an etcd restore: the bookmark's resourceVersion is
 * then one the API server has not reached, and in 1.20 a watch from such a
 * resourceVersion delivers nothing and reports no error.
 *
 * Two real control planes share one deployment's table, as a second
 * `npm start` does (a fresh control plane each start, DynamoDB Local kept):
 * the shared one (A, whose resourceVersions are high after the other tests)
 * and one this file starts (B, fresh). A restore is modelled in B by a
 * bookmark of B's own cluster ahead of B's current resourceVersion, which is
 * exactly what a restore leaves behind.
 */

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPodWatchHandler } from '../../functions/pod-watch.ts';
import type { PodEventDetail } from '../../lib/events/pod-event.ts';
import { createToolingClients, type ToolingClients } from '../../lib/kube/tooling-clients.ts';
import { type ControlPlane, startControlPlane } from '../../lib/local/control-plane.ts';
import { LocalEventBus } from '../../lib/local/event-bus.ts';
import { type InvocationResult, LocalLambdaRuntime, scheduledEvent } from '../../lib/local/lambda-runtime.ts';
import { createLocalBusPublisher } from '../../lib/local/local-bus-publisher.ts';
import { DynamoDbLockStore } from '../../lib/lock/dynamodb-lock-store.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import type { PodWatchResult } from '../../lib/pod/watch/pod-watch.ts';
import { bookmarkKey, WatchBookmarkStore } from '../../lib/pod/watch/watch-bookmark.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const adminA = adminClients(env);
const namespaceA = uniqueName('pw-cluster');
const dir = join(
  fileURLToPath(new URL('../../.local/', import.meta.url)),
  `test-cluster-b-${randomBytes(3).toString('hex')}`,
);

const SHORT_ENV = {
  SVK_LOCK_TTL_SECONDS: '3',
  SVK_LOCK_POLL_MS: '200',
  SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS: '2000',
  SVK_POD_WATCH_TIMEOUT_SECONDS: '10',
  SVK_POD_WATCH_FLUSH_MS: '100',
};

const num = (rv: string | undefined) => (rv === undefined ? -1n : BigInt(rv));

async function fakeNode(kube: ToolingClients, name: string): Promise<void> {
  await kube.core.createNode({ body: { metadata: { name } } });
}

async function createPod(kube: ToolingClients, namespace: string, node: string, name: string) {
  return kube.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        tolerations: [{ operator: 'Exists' }],
        containers: [{ name: 'c', image: 'registry.invalid/none:1' }],
      },
    },
  });
}

/** The current resourceVersion of a cluster: what a list without resourceVersion returns. */
async function currentRv(kube: ToolingClients): Promise<bigint> {
  return num(
    (await kube.core.listNamespacedConfigMap({ namespace: 'kube-system', limit: 1 })).metadata
      ?.resourceVersion,
  );
}

function resultOf(result: InvocationResult): PodWatchResult {
  assert.equal(result.status, 'ok', `invocation ended ${result.status}`);
  return (result as { result: PodWatchResult }).result;
}

/** pod-watch of `node` with its table, against the cluster of `kubeconfig`, through the local runtime. */
function watcher(table: { name: string; table: StateTable }, node: string) {
  const bus = new LocalEventBus();
  const publisher = createLocalBusPublisher(bus, { baseDelayMs: 20, maxDelayMs: 100 });
  const runtime = new LocalLambdaRuntime();
  return {
    bus,
    runtime,
    published: () => bus.published.map((e) => e.detail as unknown as PodEventDetail),
    invoke(kubeconfig: string, timeoutMs: number) {
      const fnEnv = functionEnv(table.name, {
        SVK_NODE_NAMES: node,
        SVK_KUBECONFIG: kubeconfig,
        ...SHORT_ENV,
      });
      runtime.register({
        name: 'pod-watch',
        handler: createPodWatchHandler(fnEnv, { publisher }),
        timeoutMs,
      });
      return runtime.invoke('pod-watch', scheduledEvent({ ruleName: 'pod-watch-schedule' }));
    },
  };
}

describe('pod-watch with state from another cluster or from before an etcd restore', () => {
  let cp: ControlPlane | undefined;
  let adminB: ToolingClients | undefined;
  let failed = false;
  const nodes: string[] = [];
  const runtimes: LocalLambdaRuntime[] = [];

  before(async () => {
    await createTestNamespace(adminA, namespaceA);
    cp = await startControlPlane({
      dir,
      scheduler: false,
      log: (line) => process.stderr.write(`[cluster B] ${line}\n`),
    });
    adminB = createToolingClients(cp.adminKubeconfig);
  });

  after(async () => {
    await Promise.all(runtimes.map((r) => r.stopAll({ abortRunning: true })));
    await deleteTestNamespace(adminA, namespaceA);
    await Promise.all(nodes.map((name) => adminA.core.deleteNode({ name }).catch(() => undefined)));
    await cp?.stop();
    if (!failed) rmSync(dir, { recursive: true, force: true });
  });

  it("a bookmark of another cluster: relists at once, forgets the other cluster's known pods without a GONE, and carries on watching", {
    timeout: 4 * 60_000,
  }, async (t) => {
    try {
      assert.ok(cp && adminB);
      const b = adminB;
      const table = await freshTable(env);
      const node = uniqueName('pwc');
      nodes.push(node);
      await fakeNode(adminA, node);
      await fakeNode(b, node);
      const w = watcher(table, node);
      runtimes.push(w.runtime);
      const knownPods = new KnownPodStore(table.table);
      const bookmarks = new WatchBookmarkStore(table.table, new DynamoDbLockStore(table.table));

      // The symptom needs A's bookmark ahead of B, as after a long-lived first cluster and a fresh second one.
      while ((await currentRv(adminA)) <= (await currentRv(b)) + 200n) {
        const cm = uniqueName('bump');
        await adminA.core.createNamespacedConfigMap({
          namespace: namespaceA,
          body: { metadata: { name: cm } },
        });
        await adminA.core.deleteNamespacedConfigMap({ namespace: namespaceA, name: cm });
      }

      // Cluster A: the deployment watches, a pod runs and is remembered.
      const first = w.invoke(env.kube.kubeletKubeconfig, 10_000);
      const a1 = await createPod(adminA, namespaceA, node, 'a1');
      await waitFor(() => w.published().some((e) => e.type === 'ADDED' && e.name === 'a1'), {
        timeoutMs: 15_000,
        what: 'a1 published in cluster A',
      });
      await knownPods.put(
        { node, namespace: namespaceA, name: 'a1', uid: a1.metadata?.uid ?? '' },
        undefined,
      );
      resultOf(await first.done);
      const saved = await bookmarks.get(node);
      assert.ok(saved, 'a bookmark of cluster A');
      assert.ok(num(saved.resourceVersion) > (await currentRv(b)) + 100n, 'the bookmark of A is ahead of B');
      t.diagnostic(`bookmark of A ${saved.resourceVersion}, B at ${await currentRv(b)}`);

      // Cluster B, same table: a pod is bound before the watcher starts, another one while it watches.
      await createPod(b, 'default', node, 'b1');
      const seenBefore = w.published().length;
      const second = w.invoke(cp.kubeletKubeconfig, 15_000);
      await waitFor(() => w.published().some((e) => e.type === 'ADDED' && e.name === 'b1'), {
        timeoutMs: 10_000,
        what: 'b1 announced from B (not held back behind the bookmark of A)',
      });
      await createPod(b, 'default', node, 'b2');
      await waitFor(() => w.published().some((e) => e.type === 'ADDED' && e.name === 'b2'), {
        timeoutMs: 10_000,
        what: 'b2 watched in B',
      });
      const result = resultOf(await second.done);
      assert.deepEqual(result.nodes[0]?.relists, ['other-cluster']);
      const fromB = w.published().slice(seenBefore);
      assert.deepEqual(
        fromB.filter((e) => e.name === 'a1'),
        [],
        'the pod of cluster A is not announced to pod-sync at all (no GONE: the provider is not touched)',
      );
      assert.equal(await knownPods.get(node, namespaceA, 'a1'), undefined, "A's known pod is forgotten");
      const now = await bookmarks.get(node);
      assert.ok(now && num(now.resourceVersion) <= (await currentRv(b)), "the bookmark is B's now");
      const uidB = (await b.core.readNamespace({ name: 'kube-system' })).metadata?.uid;
      assert.equal(now?.clusterUid, uidB, 'the bookmark records the cluster it belongs to');
    } catch (err) {
      failed = true;
      throw err;
    }
  });

  it('a bookmark of this cluster ahead of its current resourceVersion (an etcd restore): relists', {
    timeout: 3 * 60_000,
  }, async () => {
    try {
      assert.ok(cp && adminB);
      const b = adminB;
      const table = await freshTable(env);
      const node = uniqueName('pwr');
      await fakeNode(b, node);
      const w = watcher(table, node);
      runtimes.push(w.runtime);
      const first = w.invoke(cp.kubeletKubeconfig, 8_000);
      await createPod(b, 'default', node, 'r1');
      await waitFor(() => w.published().some((e) => e.name === 'r1'), {
        timeoutMs: 10_000,
        what: 'r1 published',
      });
      resultOf(await first.done);
      const saved = await table.table.get(bookmarkKey(node));
      assert.ok(saved?.clusterUid, 'the bookmark carries the cluster identity');

      // What a restore from an older backup leaves: the same cluster, and a bookmark it has not reached.
      const ahead = ((await currentRv(b)) + 100_000n).toString();
      await table.table.put({ ...saved, resourceVersion: ahead });
      await createPod(b, 'default', node, 'r2');
      const second = w.invoke(cp.kubeletKubeconfig, 12_000);
      await waitFor(() => w.published().some((e) => e.type === 'ADDED' && e.name === 'r2'), {
        timeoutMs: 10_000,
        what: 'r2 announced after the relist',
      });
      const result = resultOf(await second.done);
      assert.deepEqual(result.nodes[0]?.relists, ['ahead']);
      const now = await new WatchBookmarkStore(table.table, new DynamoDbLockStore(table.table)).get(node);
      assert.ok(now && num(now.resourceVersion) < num(ahead), 'the bookmark is back within the cluster');
    } catch (err) {
      failed = true;
      throw err;
    }
  });
});
