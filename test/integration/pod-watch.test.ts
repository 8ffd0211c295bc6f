/**
 * The pod-watch function against the real API server and DynamoDB Local,
 * through the local Lambda runtime, publishing onto the in-process bus.
 *
 * Pods are created by the admin directly bound (spec.nodeName) to fake nodes
 * (Node objects nothing runs): no kubelet acts on them, which is all a watcher
 * test needs. An admin watch of the same node records what really happened
 * (type, pod, resourceVersion) to compare with what was published.
 *
 * The last scenario restarts the shared kube-apiserver, so the scenarios run
 * one at a time (and test files run one at a time, see run-integration.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createPodWatchHandler } from '../../functions/pod-watch.ts';
import type { PodEventDetail } from '../../lib/events/pod-event.ts';
import { isGone } from '../../lib/kube/client.ts';
import { watchStream } from '../../lib/kube/watch.ts';
import { LocalEventBus } from '../../lib/local/event-bus.ts';
import { type InvocationResult, LocalLambdaRuntime, scheduledEvent } from '../../lib/local/lambda-runtime.ts';
import { createLocalBusPublisher } from '../../lib/local/local-bus-publisher.ts';
import { DynamoDbLockStore } from '../../lib/lock/dynamodb-lock-store.ts';
import { LockLostError, LockManager } from '../../lib/lock/lock.ts';
import { podWatchLockName } from '../../lib/lock/lock-names.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import type { PodWatchResult } from '../../lib/pod/watch/pod-watch.ts';
import { WatchBookmarkStore } from '../../lib/pod/watch/watch-bookmark.ts';
import { isWatchEventType } from '../../lib/pod/watch/watch-events.ts';
import { type WatchedPod, WatchHints } from '../../lib/pod/watch/watch-hints.ts';
import { apiServer, restoreControlPlane, testEnv } from '../support/env.ts';
import { createIdleNode, createIdlePod } from '../support/idle-pods.ts';
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
const admin = adminClients(env);
const namespace = uniqueName('pod-watch');
const nodes: string[] = [];
const runtimes: LocalLambdaRuntime[] = [];

before(async () => {
  await createTestNamespace(admin, namespace);
});

after(async () => {
  await Promise.all(runtimes.map((r) => r.stopAll({ abortRunning: true })));
  await restoreControlPlane(env);
  // Nothing runs these pods, so only a forced delete removes them.
  await deleteTestNamespace(admin, namespace);
  await Promise.all(nodes.map((name) => admin.core.deleteNode({ name }).catch(() => undefined)));
});

/** A Node object nothing runs (idle-pods.ts), deleted after the suite. */
async function fakeNode(prefix = 'pw'): Promise<string> {
  const name = uniqueName(prefix);
  nodes.push(name);
  await createIdleNode(admin, name);
  return name;
}

function createPod(node: string, name: string): Promise<V1Pod> {
  return createIdlePod(admin, namespace, node, name);
}

async function deletePod(name: string): Promise<void> {
  await admin.core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 });
}

interface Seen {
  type: string;
  name: string;
  uid: string;
  rv: string;
  /** Worth an event: pod-watch sends no event that pod-sync would skip (WatchHints.announce). */
  announced: boolean;
}

/** What really happens to the pods of `node`, from an admin watch started before anything is done. */
async function recordTruth(node: string): Promise<{ events: Seen[]; stop(): Promise<void> }> {
  const events: Seen[] = [];
  const stop = new AbortController();
  const list = await admin.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
  let rv = list.metadata?.resourceVersion ?? '0';
  const hints = new WatchHints();
  const loop = (async () => {
    while (!stop.signal.aborted) {
      await watchStream(
        admin.context,
        '/api/v1/pods',
        { fieldSelector: `spec.nodeName=${node}`, resourceVersion: rv, timeoutSeconds: 300 },
        (type, object) => {
          const pod = object as V1Pod;
          if (type === 'ERROR') throw new Error(`truth watch failed: ${JSON.stringify(object)}`);
          rv = pod.metadata?.resourceVersion ?? rv;
          const announced =
            isWatchEventType(type) && hints.announce(type, object as WatchedPod) !== undefined;
          events.push({ type, name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '', rv, announced });
        },
        stop.signal,
      ).catch(async () => {
        await new Promise((resolve) => setTimeout(resolve, 200));
      });
    }
  })();
  return {
    events,
    stop: async () => {
      stop.abort();
      await loop;
    },
  };
}

const SHORT_ENV = {
  // A crashed watcher's lock goes stale after 3 s, not 15.
  SVK_LOCK_TTL_SECONDS: '3',
  SVK_LOCK_POLL_MS: '200',
  SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS: '2000',
  SVK_POD_WATCH_TIMEOUT_SECONDS: '10',
  SVK_POD_WATCH_FLUSH_MS: '100',
};

/** One deployment: its own table (so its own locks and bookmarks), one node, the function in a local runtime. */
async function deployment(options: { env?: Record<string, string> } = {}) {
  const { name: tableName, table } = await freshTable(env);
  const node = await fakeNode();
  const bus = new LocalEventBus();
  const publisher = createLocalBusPublisher(bus, { baseDelayMs: 20, maxDelayMs: 100 });
  const runtime = new LocalLambdaRuntime();
  runtimes.push(runtime);
  const fnEnv = functionEnv(tableName, { SVK_NODE_NAMES: node, ...SHORT_ENV, ...options.env }, env);
  // One handler, so one warm sandbox for all invocations, as Lambda would mostly do.
  const handler = createPodWatchHandler(fnEnv, { publisher });
  const bookmarks = new WatchBookmarkStore(table, new DynamoDbLockStore(table));
  return {
    node,
    table,
    bus,
    invoke: (timeoutMs: number) => {
      runtime.register({ name: 'pod-watch', handler, timeoutMs });
      return runtime.invoke('pod-watch', scheduledEvent({ ruleName: 'pod-watch-schedule' }));
    },
    published: () => bus.published.map((e) => e.detail as unknown as PodEventDetail),
    bookmark: async () => (await bookmarks.get(node))?.resourceVersion,
    bookmarkRecord: () => bookmarks.get(node),
    knownPods: new KnownPodStore(table),
  };
}

function resultOf(result: InvocationResult): PodWatchResult {
  assert.equal(
    result.status,
    'ok',
    `invocation ended ${result.status}: ${String((result as { error?: unknown }).error)}`,
  );
  return (result as { result: PodWatchResult }).result;
}

const has = (published: PodEventDetail[], type: string, name: string, rv?: string) =>
  published.some((d) => d.type === type && d.name === name && (rv === undefined || d.resourceVersion === rv));

/** Truth events (type, pod, resourceVersion) worth announcing that were never published. */
function unpublished(truth: Seen[], published: PodEventDetail[]): Seen[] {
  return truth.filter((t) => t.announced && !has(published, t.type, t.name, t.rv));
}

const num = (rv: string | undefined) => (rv === undefined ? -1n : BigInt(rv));

describe('pod-watch against the real API server', () => {
  it('publishes events for its node only; the first run lists and announces gone pods; the next resumes', {
    timeout: 3 * 60_000,
  }, async () => {
    const d = await deployment();
    const other = await fakeNode('pw-other');
    const truth = await recordTruth(d.node);
    const a1 = await createPod(d.node, 'a1');
    await createPod(other, 'b1');
    // A pod that pod-sync remembers but that was deleted while no watcher ran.
    await d.knownPods.put({ node: d.node, namespace, name: 'ghost', uid: 'ghost-uid' }, undefined);

    const first = d.invoke(15_000);
    await waitFor(() => has(d.published(), 'GONE', 'ghost') && has(d.published(), 'ADDED', 'a1'), {
      timeoutMs: 15_000,
      what: 'the first list to be announced',
    });
    const ghost = d.published().find((e) => e.name === 'ghost');
    assert.equal(ghost?.uid, 'ghost-uid');
    assert.equal(
      d.published().find((e) => e.name === 'a1')?.resourceVersion,
      a1.metadata?.resourceVersion,
      'a listed pod is announced at its own resourceVersion',
    );

    await createPod(d.node, 'a2');
    await createPod(other, 'b2');
    await deletePod('a1');
    await deletePod('b1');
    await waitFor(() => has(d.published(), 'ADDED', 'a2') && has(d.published(), 'DELETED', 'a1'), {
      timeoutMs: 10_000,
      what: 'a2 ADDED and a1 DELETED',
    });
    const firstResult = resultOf(await first.done);
    assert.equal(firstResult.role, 'holder');
    assert.deepEqual(
      firstResult.nodes.map((n) => [n.node, n.stopped, n.relists]),
      [[d.node, 'deadline', ['no-bookmark']]],
    );
    const saved = await d.bookmark();
    assert.ok(saved, 'bookmark saved at hand-off');

    // The next invocation resumes from the bookmark: no list, and it gets the lock at once (released).
    const second = d.invoke(12_000);
    await createPod(d.node, 'a3');
    await waitFor(() => has(d.published(), 'ADDED', 'a3'), { timeoutMs: 10_000, what: 'a3 ADDED' });
    // Only a BOOKMARK event (sent 2 s before each watch request ends) can carry our bookmark past a
    // change on another node.
    const elsewhere = await createPod(other, 'b3');
    const secondResult = resultOf(await second.done);
    assert.ok(
      num(await d.bookmark()) >= num(elsewhere.metadata?.resourceVersion),
      'the bookmark follows the API server while our node is quiet',
    );
    assert.deepEqual(
      secondResult.nodes.map((n) => [n.relists, n.epoch]),
      [[[], 2]],
    );
    await truth.stop();

    const published = d.published();
    assert.deepEqual(
      published.filter((e) => e.node !== d.node),
      [],
      'every event is for our node',
    );
    assert.ok(
      !published.some((e) => e.name.startsWith('b')),
      'pods of the other node never produce an event',
    );
    assert.deepEqual(unpublished(truth.events, published), [], 'everything that happened was published');
    assert.ok(num(await d.bookmark()) >= num(truth.events.at(-1)?.rv), 'bookmark at or past the last event');
  });

  it('saves the bookmark only after the events up to it were published; a permanent failure is re-delivered by the next run', {
    timeout: 3 * 60_000,
  }, async () => {
    // Save after every publish, so that any early save would be caught.
    const d = await deployment({ env: { SVK_POD_WATCH_BOOKMARK_INTERVAL_MS: '0' } });
    const truth = await recordTruth(d.node);
    const first = d.invoke(25_000);
    await waitFor(() => d.bookmark(), { timeoutMs: 15_000, what: 'the first bookmark' });

    // Invariant, checked continuously: every event at or before the saved bookmark has been published.
    const violations: string[] = [];
    let monitoring = true;
    const monitor = (async () => {
      while (monitoring) {
        const saved = num(await d.bookmark());
        // Read after the bookmark: the published list only grows, so this cannot miss an event.
        const missing = unpublished(
          truth.events.filter((t) => num(t.rv) <= saved),
          d.published(),
        );
        if (missing.length > 0) violations.push(`bookmark ${saved} ahead of ${JSON.stringify(missing)}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    const nameOf = (detail: string | undefined) => (JSON.parse(detail ?? '{}') as PodEventDetail).name;
    let transientFailures = 0;
    d.bus.failEntries((entry) => nameOf(entry.Detail) === 't2' && transientFailures++ < 2);
    for (const name of ['t1', 't2', 't3']) await createPod(d.node, name);
    await waitFor(() => ['t1', 't2', 't3'].every((n) => has(d.published(), 'ADDED', n)), {
      timeoutMs: 10_000,
      what: 't1..t3 published',
    });
    assert.equal(transientFailures, 3, 't2 failed twice, then was accepted');
    const t3 = truth.events.find((t) => t.name === 't3' && t.type === 'ADDED');
    await waitFor(async () => num(await d.bookmark()) >= num(t3?.rv), {
      timeoutMs: 5_000,
      what: 'the bookmark to pass t3 once published',
    });

    // p4 is never accepted: the watcher must not save a bookmark at or past it.
    let permanentFailures = 0;
    d.bus.failEntries((entry) => nameOf(entry.Detail) === 'p4' && ++permanentFailures > 0);
    const p4 = await createPod(d.node, 'p4');
    await createPod(d.node, 'p5');
    await waitFor(() => permanentFailures >= 8, {
      timeoutMs: 15_000,
      what: 'two failed publish rounds of p4',
    });
    const firstResult = resultOf(await first.done);
    assert.ok((firstResult.nodes[0]?.publishFailures ?? 0) >= 2, 'publish failures reported');
    const stuck = await d.bookmark();
    assert.ok(num(stuck) < num(p4.metadata?.resourceVersion), `bookmark ${stuck} stayed before p4`);
    assert.ok(!has(d.published(), 'ADDED', 'p4'));

    d.bus.failEntries(undefined);
    const second = d.invoke(12_000);
    await waitFor(() => has(d.published(), 'ADDED', 'p4') && has(d.published(), 'ADDED', 'p5'), {
      timeoutMs: 10_000,
      what: 'p4 and p5 re-delivered by the next run',
    });
    const secondResult = resultOf(await second.done);
    assert.deepEqual(secondResult.nodes[0]?.relists, [], 'resumed from the bookmark');
    monitoring = false;
    await monitor;
    await truth.stop();
    assert.deepEqual(violations, []);
    assert.deepEqual(unpublished(truth.events, d.published()), []);
    assert.ok(num(await d.bookmark()) >= num(truth.events.at(-1)?.rv));
  });

  it('after a watcher crashed mid-watch while pods came and went, the next run delivers everything that happened', {
    timeout: 3 * 60_000,
  }, async () => {
    const d = await deployment();
    const truth = await recordTruth(d.node);
    const crashed = d.invoke(60_000);
    await waitFor(() => d.bookmark(), { timeoutMs: 15_000, what: 'the first bookmark' });
    await createPod(d.node, 'c1');
    const c2 = await createPod(d.node, 'c2');
    // Saved during the watch (within the 1 s bookmark interval), not only at hand-off.
    await waitFor(async () => num(await d.bookmark()) >= num(c2.metadata?.resourceVersion), {
      timeoutMs: 10_000,
      what: 'the bookmark to pass c2',
    });
    assert.ok(has(d.published(), 'ADDED', 'c2'));

    // Crash in the middle of a stream of changes; the changes go on while no watcher runs.
    const churn: Array<() => Promise<unknown>> = [
      () => createPod(d.node, 'c3'),
      () => deletePod('c1'),
      async () => crashed.crash('killed by the test'),
      () => createPod(d.node, 'c4'),
      () => deletePod('c2'),
      () => createPod(d.node, 'c5'),
      () => deletePod('c3'),
    ];
    for (const step of churn) await step();
    assert.equal((await crashed.done).status, 'crashed');
    const lastChange = truth.events.at(-1);

    const next = d.invoke(20_000);
    await waitFor(() => unpublished(truth.events, d.published()).length === 0, {
      timeoutMs: 20_000,
      what: 'every change published',
    });
    const result = resultOf(await next.done);
    await truth.stop();
    assert.deepEqual(
      result.nodes.map((n) => [n.relists, n.epoch]),
      [[[], 2]],
      'took the stale lock over and resumed from the bookmark',
    );
    assert.deepEqual(unpublished(truth.events, d.published()), []);
    const happened = new Set(truth.events.map((t) => `${t.type} ${t.name}`));
    for (const change of ['DELETED c1', 'ADDED c4', 'DELETED c2', 'ADDED c5', 'DELETED c3'])
      assert.ok(happened.has(change), `${change} happened`);
    assert.ok(num(await d.bookmark()) >= num(lastChange?.rv));
    assert.deepEqual(
      d.published().filter((e) => e.node !== d.node),
      [],
    );
  });

  it('a deposed watcher stops at once and cannot move the bookmark (fenced)', {
    timeout: 2 * 60_000,
  }, async () => {
    const d = await deployment();
    const deposed = d.invoke(20_000);
    await createPod(d.node, 'f1');
    await waitFor(async () => has(d.published(), 'ADDED', 'f1') && (await d.bookmark()), {
      timeoutMs: 15_000,
      what: 'f1 published and a bookmark saved',
    });

    // Another watcher takes the lock over (as after a freeze longer than the lease) and keeps it alive.
    const store = new DynamoDbLockStore(d.table);
    const lockName = podWatchLockName(d.node);
    const current = await store.get(lockName);
    assert.ok(current?.owner);
    const usurper = new LockManager({ store, owner: 'usurper', ttlMs: 3_000 });
    const next = { ...current, owner: 'usurper', epoch: current.epoch + 1, rvn: randomUUID() };
    await store.replaceIfVersion(current.rvn, next);
    // From here on, any write of the deposed watcher's epoch is rejected.
    const before = await d.bookmarkRecord();
    assert.equal(before?.epoch, 1);
    const handle = { name: lockName, owner: 'usurper', epoch: next.epoch, rvn: next.rvn, validUntil: 0 };
    let renewing = true;
    const renewer = (async () => {
      while (renewing) {
        await usurper.renew(handle);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    await createPod(d.node, 'f2');

    const result = resultOf(await deposed.done);
    renewing = false;
    await renewer;
    assert.deepEqual(
      result.nodes.map((n) => [n.epoch, n.stopped]),
      [[1, 'lock-lost']],
      'stopped on losing the lock and stood by afterwards',
    );
    assert.deepEqual(await d.bookmarkRecord(), before, 'the bookmark did not move after the takeover');
    // The fence itself: a bookmark write with the deposed epoch is rejected and writes nothing.
    const stale = {
      name: lockName,
      owner: current.owner,
      epoch: current.epoch,
      rvn: current.rvn,
      validUntil: 0,
    };
    await assert.rejects(
      () => new WatchBookmarkStore(d.table, new DynamoDbLockStore(d.table)).save(d.node, '1', stale),
      LockLostError,
    );
    assert.deepEqual(await d.bookmarkRecord(), before);
  });

  it('with the Docker provider over TLS, builds no provider and reads no secret: its role may not read the engine secret', {
    timeout: 2 * 60_000,
  }, async () => {
    // Where the SDK would send GetSecretValue (AWS_ENDPOINT_URL_SECRETS_MANAGER): a loopback server noting every request.
    const asked: string[] = [];
    const secrets = createServer((req, res) => {
      asked.push(`${req.method} ${req.headers['x-amz-target'] ?? req.url}`);
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify({ __type: 'AccessDeniedException', message: 'pod-watch may not read this' }));
    });
    await new Promise<void>((resolve) => secrets.listen(0, '127.0.0.1', resolve));
    const { port } = secrets.address() as AddressInfo;
    const saved = {
      AWS_ENDPOINT_URL_SECRETS_MANAGER: process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER,
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
    };
    // The SDK reads its endpoint and credentials from the process's environment, not the function's.
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = `http://127.0.0.1:${port}`;
    process.env.AWS_ACCESS_KEY_ID ??= 'local';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
    try {
      const d = await deployment({
        env: {
          SVK_PROVIDER: 'docker',
          // No engine answers there: pod-watch must never need one.
          SVK_DOCKER_HOST: 'tcp://127.0.0.1:9',
          SVK_DOCKER_TLS_SECRET: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:engine-tls-AbCdEf',
        },
      });
      await createPod(d.node, 'tls-a1');
      const done = await d.invoke(8_000).done;
      assert.deepEqual(asked, [], 'no request for the engine secret');
      assert.equal(resultOf(done).role, 'holder');
      assert.ok(has(d.published(), 'ADDED', 'tls-a1'), 'the pod announced as on any other deployment');
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await new Promise((resolve) => secrets.close(resolve));
    }
  });

  it('relists after etcd compaction and an API server restart expire the bookmark (410), announcing pods deleted meanwhile as GONE', {
    timeout: 5 * 60_000,
  }, async () => {
    const d = await deployment();
    const first = d.invoke(12_000);
    const pods = new Map<string, V1Pod>();
    for (const name of ['g1', 'g2', 'g3']) pods.set(name, await createPod(d.node, name));
    await waitFor(() => ['g1', 'g2', 'g3'].every((n) => has(d.published(), 'ADDED', n)), {
      timeoutMs: 15_000,
      what: 'g1..g3 published',
    });
    // What pod-sync would have remembered after handling those events.
    for (const [name, pod] of pods) {
      await d.knownPods.put({ node: d.node, namespace, name, uid: pod.metadata?.uid ?? '' }, undefined);
    }
    resultOf(await first.done);
    const stale = await d.bookmark();
    assert.ok(stale);

    // While no watcher runs: g1 goes, g4 comes, etcd compacts its history, the API server restarts.
    await deletePod('g1');
    const g4 = await createPod(d.node, 'g4');
    const revision = await etcd<{ header: { revision: string } }>('/v3/kv/range', { key: 'AA==' });
    await etcd('/v3/kv/compaction', { revision: revision.header.revision, physical: true });
    // Compaction alone does not expire a watch: 1.20 serves watches from its watch cache, whose window
    // is its own. A restart rebuilds that cache at the current revision, so the bookmark falls out of it.
    await apiServer('stop', env);
    await apiServer('start', env);
    const probe = await waitFor(() => watchStatus(d.node, stale), {
      timeoutMs: 30_000,
      what: 'a watch from the old bookmark to answer',
    });
    assert.ok(isGone(probe), `a watch from ${stale} now fails with 410: ${JSON.stringify(probe)}`);

    const seenBefore = d.published().length;
    const second = d.invoke(15_000);
    await waitFor(() => has(d.published(), 'GONE', 'g1'), { timeoutMs: 15_000, what: 'g1 GONE' });
    await createPod(d.node, 'g5');
    await waitFor(() => has(d.published(), 'ADDED', 'g5'), {
      timeoutMs: 10_000,
      what: 'g5 watched after the relist',
    });
    const result = resultOf(await second.done);
    assert.deepEqual(result.nodes[0]?.relists, ['expired']);

    const relisted = d.published().slice(seenBefore);
    // The relist's events come first; later watch events (if anything touched the pods) may follow.
    const firstOf = (name: string) => relisted.find((e) => e.name === name);
    assert.deepEqual(
      relisted.filter((e) => e.name === 'g1').map((e) => [e.type, e.uid]),
      [['GONE', pods.get('g1')?.metadata?.uid]],
      'the pod deleted while nobody watched is announced GONE, with its uid',
    );
    assert.ok(!has(d.published(), 'DELETED', 'g1'), 'its DELETED was never seen');
    assert.equal(firstOf('g2')?.type, 'MODIFIED', 'a remembered pod is announced as MODIFIED');
    assert.equal(firstOf('g3')?.type, 'MODIFIED');
    assert.equal(firstOf('g4')?.type, 'ADDED', 'a pod created meanwhile is announced as ADDED');
    assert.equal(firstOf('g4')?.resourceVersion, g4.metadata?.resourceVersion);
    assert.ok(num(await d.bookmark()) > num(stale));
  });
});

async function etcd<T = unknown>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`${env.etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) });
  assert.equal(res.status, 200, `etcd ${path}: ${res.status}`);
  return (await res.json()) as T;
}

/** How the API server answers a watch of `node`'s pods from `rv`: the ERROR status, or 'ok'. */
async function watchStatus(node: string, rv: string): Promise<unknown> {
  const stop = new AbortController();
  let status: unknown = 'ok';
  try {
    await watchStream(
      admin.context,
      '/api/v1/pods',
      { fieldSelector: `spec.nodeName=${node}`, resourceVersion: rv, timeoutSeconds: 2 },
      (type, object) => {
        if (type === 'ERROR') status = object;
        stop.abort();
      },
      stop.signal,
    );
  } catch (err) {
    if (!isGone(err)) return undefined;
    status = err;
  }
  return status;
}
