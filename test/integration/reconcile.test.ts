/**
 * The leader-elected reconciler against the real control plane and DynamoDB
 * Local: election and take-over, fenced status writes, rolling-upgrade
 * gating, and what reconcileAll repairs. Each scenario is its own deployment
 * (own table, so own locks and status) with its own nodes; periods are
 * shortened through the environment.
 */

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { createReconcileHandler } from '../../functions/reconcile.ts';
import { loadDependencies } from '../../lib/app/dependencies.ts';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { isNotFound } from '../../lib/kube/client.ts';
import { type InvocationResult, LocalLambdaRuntime, scheduledEvent } from '../../lib/local/lambda-runtime.ts';
import { DynamoDbLockStore, lockKey } from '../../lib/lock/dynamodb-lock-store.ts';
import { RECONCILE_LOCK } from '../../lib/lock/lock-names.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { MockPodProvider } from '../../lib/provider/mock/mock-pods.ts';
import type { ReconcileAllResult } from '../../lib/reconcile/reconcile-all.ts';
import { type ReconcileResult, reconcile } from '../../lib/reconcile/reconcile-entry.ts';
import type { Transition } from '../../lib/reconcile/transitions.ts';
import { isReleaseRefused } from '../../lib/release/gate.ts';
import { ReconcilerStatusStore, STATUS_KEY } from '../../lib/release/reconciler-status.ts';
import { RELEASES_PARTITION } from '../../lib/release/running-releases.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  readLease,
  readNode,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const reconcileModule = fileURLToPath(new URL('../../functions/reconcile.ts', import.meta.url));
const namespace = uniqueName('reconcile');
const nodes: string[] = [];
const runtimes: LocalLambdaRuntime[] = [];
const running: Array<{ abort: AbortController; done: Promise<unknown> }> = [];

/** Fast periods for every scenario; each scenario adds its own. */
const FAST = {
  SVK_LOCK_TTL_SECONDS: '3',
  SVK_LOCK_POLL_MS: '250',
  SVK_RECONCILE_INTERVAL_SECONDS: '2',
  // The dropped-event tests create pods and expect the next passes to repair them.
  SVK_RECONCILE_RESYNC_GRACE_SECONDS: '0',
  SVK_RECONCILE_LEADER_WAIT_MS: '500',
  SVK_RECONCILE_STOP_BEFORE_DEADLINE_MS: '1000',
};

before(async () => {
  await createTestNamespace(admin, namespace);
});

after(async () => {
  for (const r of running) r.abort.abort();
  await Promise.allSettled(running.map((r) => r.done));
  await Promise.all(runtimes.map((r) => r.stopAll({ abortRunning: true })));
  await deleteTestNamespace(admin, namespace);
  await Promise.all(nodes.map((n) => deleteNodeAndLease(admin, n)));
});

function node(prefix: string): string {
  const name = uniqueName(prefix);
  nodes.push(name);
  return name;
}

/** Runs the reconcile entry point in this process, as one invocation of `ms`; abort() crashes it. */
function startReconcile(
  fnEnv: Record<string, string>,
  ms: number,
  hooks: Parameters<typeof reconcile>[2] = {},
): { abort: AbortController; done: Promise<ReconcileResult> } {
  const abort = new AbortController();
  const invocation = {
    requestId: `test-${randomUUID().slice(0, 8)}`,
    functionName: 'reconcile',
    deadline: performance.now() + ms,
    signal: AbortSignal.any([abort.signal, AbortSignal.timeout(ms)]),
  };
  const done = loadDependencies(loadConfig(fnEnv)).then((deps) => reconcile(deps, invocation, hooks));
  const entry = { abort, done };
  running.push(entry);
  return entry;
}

async function readStatus(table: StateTable) {
  return new ReconcilerStatusStore(table, new DynamoDbLockStore(table)).get();
}

async function readPod(name: string): Promise<V1Pod | undefined> {
  try {
    return await admin.core.readNamespacedPod({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function createPod(name: string, nodeName: string, grace = 30): Promise<V1Pod> {
  return admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        nodeName,
        tolerations: [{ operator: 'Exists' }],
        terminationGracePeriodSeconds: grace,
        automountServiceAccountToken: false,
        containers: [{ name: 'app', image: 'registry.example/app:1' }],
      },
    },
  });
}

/** namespace/name -> uid of the provider's pods of `nodeName` in this file's namespace. */
async function providerPods(provider: MockPodProvider, nodeName: string): Promise<Map<string, string>> {
  const pods = await provider.listPods(nodeName);
  return new Map(
    pods
      .filter((p) => p.metadata?.namespace === namespace)
      .map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']),
  );
}

describe('reconciler election and fencing', () => {
  it('two invocations at once: one leads; killed, the other leads within one lock TTL', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable(env);
    const vk = node('rec-elect');
    const results: InvocationResult[] = [];
    const runtime = new LocalLambdaRuntime({ onResult: (_i, r) => results.push(r) });
    runtimes.push(runtime);
    const LEASE_MS = 4_000;
    runtime.register({
      name: 'reconcile',
      mode: 'child-process',
      module: reconcileModule,
      env: functionEnv(tableName, { ...FAST, SVK_NODE_NAMES: vk, SVK_LOCK_TTL_SECONDS: '4' }, env),
      timeoutMs: 90_000,
    });
    const a = runtime.invoke('reconcile', scheduledEvent());
    const b = runtime.invoke('reconcile', scheduledEvent());

    const status = await waitFor(
      async () => {
        const s = await readStatus(table);
        return s?.state === 'done' ? s : undefined;
      },
      { timeoutMs: 60_000, what: 'the first leader to complete a reconcile' },
    );
    assert.equal(status.epoch, 1, 'written by the first holder');
    const lock = await table.get(lockKey(RECONCILE_LOCK));
    const leader = [a, b].find((i) => String(lock?.owner).startsWith(`${i.requestId}/`));
    const standby = [a, b].find((i) => i !== leader);
    assert.ok(leader && standby, 'one of the two holds the lock');
    assert.equal(runtime.runningCount('reconcile'), 2, 'the other stands by');

    leader.crash('killed by the test');
    const killedAt = Date.now();
    const taken = await waitFor(
      async () => {
        const l = await table.get(lockKey(RECONCILE_LOCK));
        return (l?.epoch as number) > (lock?.epoch as number) ? l : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the standby to take the lock over' },
    );
    const tookOverAfter = Date.now() - killedAt;
    assert.ok(String(taken.owner).startsWith(`${standby.requestId}/`), 'the standby leads');
    // One lease since its last renewal (at most a third of a lease before the kill), plus one poll.
    assert.ok(tookOverAfter <= LEASE_MS + 250 + 2_000, `took over after ${tookOverAfter} ms`);
    // The new leader acts: a Node deleted behind its back is registered again.
    const old = await readNode(admin, vk);
    await admin.core.deleteNode({ name: vk });
    await waitFor(
      async () => {
        const n = await readNode(admin, vk);
        return n !== undefined && n.metadata?.uid !== old?.metadata?.uid;
      },
      { timeoutMs: 30_000, what: 'the new leader to register the deleted Node again' },
    );
    standby.crash('done');
  });

  it('a leader whose lock was taken over has its status write rejected and stops acting', {
    timeout: 2 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable(env);
    const vk = node('rec-fence');
    // A previous, compatible release's status: the new leader marks it working after its wait.
    const previous = { state: 'done', version: '0.9.0', minCompatibleRelease: '0.1.0' } as const;
    await table.put({ ...STATUS_KEY, ...previous, epoch: 0, updatedAt: new Date().toISOString() });
    let transition: Transition | undefined;
    const reconciles: unknown[] = [];
    const { done } = startReconcile(
      functionEnv(tableName, {
        ...FAST,
        SVK_NODE_NAMES: vk,
        SVK_RELEASE: '1.0.0',
        // Renewals far apart, so the leader learns of the take-over from its status write.
        SVK_LOCK_TTL_SECONDS: '60',
        SVK_RECONCILE_LEADER_WAIT_MS: '4000',
      }),
      60_000,
      { onTransition: (t) => (transition = t), onReconcile: (r) => reconciles.push(r) },
    );
    const held = await waitFor(
      async () => {
        const l = await table.get(lockKey(RECONCILE_LOCK));
        return typeof l?.owner === 'string' && transition ? l : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50, what: 'the leader to be elected and read the status' },
    );
    assert.equal(transition?.kind, 'mark-working');
    // Another invocation takes the lock over while the leader waits.
    await table.put({
      ...lockKey(RECONCILE_LOCK),
      name: RECONCILE_LOCK,
      owner: 'intruder/1',
      epoch: (held.epoch as number) + 1,
      rvn: randomUUID(),
      ttlMs: 60_000,
      updatedAt: new Date().toISOString(),
    });

    const result = await done;
    assert.equal(result.role, 'holder');
    if (result.role !== 'holder') return;
    assert.equal(result.stopped, 'lock-lost');
    assert.equal(result.rejectedStatusWrites, 1, 'its status write was rejected');
    assert.equal(result.initialAttempts, 0, 'it did not reconcile after losing the lock');
    assert.deepEqual(reconciles, []);
    const status = await readStatus(table);
    assert.equal(status?.state, previous.state, 'the status is unchanged');
    assert.equal(status?.version, previous.version);
    assert.equal((await table.get(lockKey(RECONCILE_LOCK)))?.owner, 'intruder/1', 'the new holder keeps it');
    assert.equal(await readNode(admin, vk), undefined, 'nothing was done in the cluster');
  });
});

describe('rolling-upgrade gating', () => {
  it('after a newer reconciler raised the minimum, an older release refuses to act and the newer acts', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable(env);
    const vk = node('rec-gate');
    const common = {
      ...FAST,
      SVK_NODE_NAMES: vk,
      SVK_RELEASE_RECORD_TTL_SECONDS: '10',
      // Every check reads the status, so the late release-1 invocation below sees the restriction at once.
      SVK_RELEASE_STATUS_CACHE_SECONDS: '0',
      SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS: '1',
      SVK_NODE_LEASE_DURATION_SECONDS: '10',
      SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS: '1000',
    };
    const v1 = functionEnv(tableName, {
      ...common,
      SVK_RELEASE: '1.0.0',
      SVK_MIN_COMPATIBLE_RELEASE: '1.0.0',
    });
    const v2 = functionEnv(tableName, {
      ...common,
      SVK_RELEASE: '2.0.0',
      SVK_MIN_COMPATIBLE_RELEASE: '2.0.0',
      SVK_REQUIRED_RECONCILER_RELEASE: '2.0.0',
    });
    const runtime = new LocalLambdaRuntime();
    runtimes.push(runtime);
    runtime.register({ name: 'reconcile-v1', handler: createReconcileHandler(v1), timeoutMs: 8_000 });
    runtime.register({ name: 'reconcile-v2', handler: createReconcileHandler(v2), timeoutMs: 30_000 });
    runtime.register({ name: 'heartbeat-v1', handler: createHeartbeatHandler(v1), timeoutMs: 5_000 });
    runtime.register({ name: 'heartbeat-v2', handler: createHeartbeatHandler(v2), timeoutMs: 5_000 });
    const invoke = async (name: string) => {
      const r = await runtime.invoke(name, scheduledEvent()).done;
      assert.equal(r.status, 'ok', `${name}: ${r.status === 'ok' ? '' : String(r.error)}`);
      return (r as { result: unknown }).result;
    };
    const heartbeatEpoch = async () => ((await table.get(lockKey('heartbeat')))?.epoch as number) ?? 0;

    // Release 1 reconciles and acts.
    assert.equal(((await invoke('reconcile-v1')) as ReconcileResult).role, 'holder');
    assert.deepEqual(
      { ...(await readStatus(table)), epoch: 0, updatedAt: '' },
      { state: 'done', version: '1.0.0', minCompatibleRelease: '1.0.0', epoch: 0, updatedAt: '' },
    );
    const v1Heartbeat = await invoke('heartbeat-v1');
    assert.equal(isReleaseRefused(v1Heartbeat), false, 'release 1 acts under its own status');
    assert.equal(await heartbeatEpoch(), 1);

    // Release 2 is deployed: its reconciler waits for release 1 to stop running, then restricts.
    const upgraded = (await invoke('reconcile-v2')) as ReconcileResult;
    assert.equal(isReleaseRefused(upgraded), false);
    assert.equal(upgraded.role === 'holder' && upgraded.transition, 'restrict');
    const status = await readStatus(table);
    assert.equal(status?.state, 'done');
    assert.equal(status?.version, '2.0.0');
    assert.equal(status?.minCompatibleRelease, '2.0.0');
    const v1Record = await table.get({ pk: RELEASES_PARTITION, sk: '1.0.0' });
    assert.ok(
      Date.parse(status?.updatedAt ?? '') >= (v1Record?.expiresAtMs as number),
      'restricted only after release 1 stopped running',
    );

    // A late invocation of release 1 refuses and does nothing; release 2 acts.
    const refused = await invoke('heartbeat-v1');
    assert.ok(isReleaseRefused(refused), 'the old heartbeat refuses');
    assert.match(refused.reason, /1\.0\.0 is below the minimum compatible release 2\.0\.0/);
    assert.equal(await heartbeatEpoch(), 1, 'it did not even campaign');
    assert.ok(isReleaseRefused(await invoke('reconcile-v1')), 'the old reconciler refuses too');
    assert.equal(isReleaseRefused(await invoke('heartbeat-v2')), false, 'the new heartbeat acts');
    assert.equal(await heartbeatEpoch(), 2);
  });
});

describe('what reconcileAll repairs', () => {
  it('pods whose events were dropped reach the provider, deleted ones leave it, dangling ones go', {
    timeout: 3 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable(env);
    const vk = node('rec-drift');
    const provider = new MockPodProvider({ table, clock: systemClock });
    const knownPods = new KnownPodStore(table);
    // A provider pod whose API pod never existed (or went while nothing watched).
    await provider.createPod({
      metadata: { namespace, name: 'ghost', uid: randomUUID() },
      spec: { nodeName: vk, containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    });
    const passes: ReconcileAllResult[] = [];
    startReconcile(functionEnv(tableName, { ...FAST, SVK_NODE_NAMES: vk }), 120_000, {
      onReconcile: (r) => r.result && passes.push(r.result),
    });
    await waitFor(() => passes.length >= 1, { timeoutMs: 30_000, what: 'a first reconcile' });
    await waitFor(async () => !(await providerPods(provider, vk)).has('ghost'), {
      timeoutMs: 15_000,
      what: 'the dangling provider pod to be deleted',
    });

    // No pod-watch, no pod-sync: every event of these pods is dropped.
    const before = passes.length;
    const pods = await Promise.all(['a', 'b', 'c'].map((n) => createPod(`drift-${n}`, vk)));
    const agree = async () => {
      const inProvider = await providerPods(provider, vk);
      const api = (await admin.core.listNamespacedPod({ namespace, fieldSelector: `spec.nodeName=${vk}` }))
        .items;
      return (
        api.length === inProvider.size &&
        api.every((p) => inProvider.get(p.metadata?.name ?? '') === p.metadata?.uid)
      );
    };
    await waitFor(agree, { timeoutMs: 30_000, what: 'provider and API server to agree' });
    assert.ok(
      passes.length - before <= 2,
      `repaired by the first pass after the change (${passes.length - before})`,
    );
    // The provider create lands before pod-sync's reconcile completes its record.
    await waitFor(
      async () => {
        const records = await Promise.all(
          pods.map((pod) => knownPods.get(vk, namespace, pod.metadata?.name ?? '')),
        );
        return records.every((r) => r?.appliedHash !== undefined);
      },
      { timeoutMs: 15_000, what: 'the known-pod records to be completed' },
    );
    for (const pod of pods) {
      const record = await knownPods.get(vk, namespace, pod.metadata?.name ?? '');
      assert.equal(record?.uid, pod.metadata?.uid, 'recorded as pod-sync records it');
      assert.ok(record?.appliedHash, 'with the spec applied');
    }

    // The DELETED event is dropped too.
    await admin.core.deleteNamespacedPod({ namespace, name: 'drift-a', gracePeriodSeconds: 0 });
    await waitFor(async () => (await readPod('drift-a')) === undefined, {
      timeoutMs: 10_000,
      what: 'drift-a gone',
    });
    await waitFor(agree, { timeoutMs: 30_000, what: 'the deleted pod to leave the provider' });
    assert.equal(await knownPods.get(vk, namespace, 'drift-a'), undefined, 'its record forgotten');
    const last = passes.at(-1);
    assert.deepEqual(last?.failures, []);
  });

  it('a node removed from the configuration loses its Node and Lease only after its pods are gone', {
    timeout: 4 * 60_000,
  }, async () => {
    const { name: tableName, table } = await freshTable(env);
    const kept = node('rec-kept');
    const removed = node('rec-gone');
    const provider = new MockPodProvider({ table, clock: systemClock });

    const first = startReconcile(
      functionEnv(tableName, { ...FAST, SVK_NODE_NAMES: `${kept},${removed}` }),
      120_000,
    );
    await waitFor(async () => (await readNode(admin, removed)) && (await readLease(admin, removed)), {
      timeoutMs: 30_000,
      what: `${removed} registered with its lease`,
    });
    const pod = await createPod('on-removed', removed);
    await waitFor(async () => (await providerPods(provider, removed)).has('on-removed'), {
      timeoutMs: 30_000,
      what: 'the pod in the provider',
    });
    first.abort.abort();
    await first.done;

    // The next release's configuration no longer has the node.
    const passes: ReconcileAllResult[] = [];
    startReconcile(functionEnv(tableName, { ...FAST, SVK_NODE_NAMES: kept }), 120_000, {
      onReconcile: (r) => r.result && passes.push(r.result),
    });
    await waitFor(() => passes.filter((p) => p.draining[removed] === 1).length >= 2, {
      timeoutMs: 60_000,
      what: 'two passes that find the removed node still has a pod',
    });
    const cordoned = await readNode(admin, removed);
    assert.ok(cordoned, 'the Node stays while its pod exists');
    assert.equal(cordoned.spec?.unschedulable, true, 'and is cordoned');
    assert.ok(await readLease(admin, removed), 'so does its Lease');

    // The pod is deleted (graceful): the reconciler finishes the deletion, then removes the node.
    await admin.core.deleteNamespacedPod({ namespace, name: 'on-removed' });
    await waitFor(async () => (await readNode(admin, removed)) === undefined, {
      timeoutMs: 60_000,
      what: `${removed} deleted`,
    });
    assert.equal(await readPod('on-removed'), undefined, 'its pod was gone first');
    assert.equal(await readLease(admin, removed), undefined, 'its Lease is gone');
    assert.equal((await providerPods(provider, removed)).size, 0, 'nothing left in the provider');
    assert.ok(passes.some((p) => p.removed.includes(removed)));
    assert.ok(await readNode(admin, kept), 'the configured node stays');
    assert.ok(pod.metadata?.uid);
  });
});
