/**
 * The fault classes that run in minutes, against the whole deployment (the
 * mock provider in the pipeline harness, the tick cadence) on the real
 * control plane and DynamoDB Local, one after another on one deployment:
 *
 * - kube-apiserver answering slowly: a TCP proxy on loopback in front of it
 *   holds every chunk 500 ms each way (a TLS handshake pays it per flight);
 * - kube-apiserver accepting connections but never answering: SIGSTOPped
 *   for 20 s, then SIGCONTed (the kernel still accepts connections);
 * - DynamoDB throttling: a proxy on loopback in front of DynamoDB Local
 *   answers half the requests (a seeded draw) with
 *   ProvisionedThroughputExceededException or ThrottlingException, which
 *   the AWS SDK's own retry strategy handles;
 * - DynamoDB transaction conflicts: half the writes answered with
 *   TransactionCanceledException (TransactionConflict) or
 *   TransactionConflictException, which the SDK does not retry;
 * - PutEvents partial failure: the local bus refuses every other entry;
 * - kube-apiserver's serving certificate rotated (same CA, a new key) while
 *   the functions are warm, their kept-alive connections then reset.
 *
 * - wall clocks 30 s apart: a lock contender ahead or behind by 30 s (an
 *   injected clock) against a live and a frozen holder, on DynamoDB Local.
 *
 * In each deployment fault, pods are created and deleted while the fault is on. A slow API
 * server and refused PutEvents entries stay on until those pods have
 * converged (progress under the fault, within 2 minutes); the DynamoDB
 * faults until the proxy has refused a number of requests, the SIGSTOP for
 * 20 s, and the pods converge within 2 minutes of the fault's end. Throughout, sampled every
 * second, the node never leaves Ready, no pod is created twice by the
 * provider, and no invocation outlives its timeout. Stops the shared API
 * server, so it lives in a file of its own (test files run one at a time).
 * bench/faults.ts measures the same classes over longer windows with three
 * nodes and every period at its default.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { type Clock, systemClock } from '../../lib/clock.ts';
import { DynamoDbLockStore } from '../../lib/lock/dynamodb-lock-store.ts';
import { LockManager } from '../../lib/lock/lock.ts';
import { PipelineHarness } from '../harness/pipeline-harness.ts';
import { mockProviderSetup } from '../harness/providers/mock.ts';
import { testEnv } from '../support/env.ts';
import {
  type DelayProxy,
  type DynamoFaultProxy,
  refuseAtRate,
  startDelayProxy,
  startDynamoFaultProxy,
  throttled,
  transactionConflict,
  WRITE_OPERATIONS,
} from '../support/fault-proxies.ts';
import { freshTable, readyStatus, uniqueName, waitFor } from '../support/kube.ts';
import { rotateServingCertificate } from '../support/serving-cert.ts';

const env = testEnv();
const CONVERGE_MS = 2 * 60_000;
const STALL_MS = 20_000;

/** A copy of `kubeconfig` whose server is `address` (same certificate: it names 127.0.0.1). */
function kubeconfigThrough(kubeconfig: string, address: string): string {
  const server = new URL(env.kube.server);
  const text = readFileSync(kubeconfig, 'utf8');
  const through = text.replaceAll(`https://${server.host}`, `https://${address}`);
  assert.notEqual(through, text, `${kubeconfig} names ${server.host}`);
  const path = join(tmpdir(), `${uniqueName('faults')}.kubeconfig`);
  writeFileSync(path, through, { mode: 0o600 });
  return path;
}

function apiServerPid(): number {
  return Number(readFileSync(join(env.controlPlaneDir, 'pids', 'kube-apiserver.pid'), 'utf8'));
}

/** The system clock with its wall time `offsetMs` away; monotonic time and sleeps unchanged. */
function skewed(offsetMs: number): Clock {
  return { ...systemClock, now: () => Date.now() + offsetMs };
}

describe('wall clocks 30 s apart between invocations', () => {
  for (const offsetMs of [30_000, -30_000]) {
    it(`a contender ${offsetMs > 0 ? 'ahead' : 'behind'} by 30 s takes no live lock, and a frozen one only after a whole TTL of its own`, async () => {
      const { table } = await freshTable(env);
      const store = new DynamoDbLockStore(table);
      const name = uniqueName('skew');
      const ttlMs = 1_500;
      const holder = new LockManager({ store, owner: 'holder', ttlMs, clock: systemClock });
      const contender = new LockManager({ store, owner: 'contender', ttlMs, clock: skewed(offsetMs) });
      const handle = await holder.tryAcquire(name);
      assert.ok(handle);
      const keep = setInterval(() => holder.renew(handle).catch(() => undefined), 400);
      try {
        const got = await contender.acquire(name, { pollMs: 200, until: performance.now() + 3 * ttlMs });
        assert.equal(got, undefined, 'the live holder keeps its lock');
      } finally {
        clearInterval(keep);
      }
      // The holder freezes: the contender takes over after watching the record unchanged for one TTL.
      const frozenAt = performance.now();
      const taken = await contender.acquire(name, { pollMs: 200, until: performance.now() + 10_000 });
      assert.ok(taken, 'taken over once the holder stopped');
      assert.ok(performance.now() - frozenAt >= ttlMs, 'not before a whole TTL');
      assert.equal(holder.isValid(handle), false);
    });
  }
});

describe('fault classes against the whole deployment', () => {
  let h: PipelineHarness | undefined;
  let kubeProxy: DelayProxy | undefined;
  let dynamoProxy: DynamoFaultProxy | undefined;
  let stopped: number | undefined;
  let namespace = '';
  let seq = 0;
  /** Pods of the scenarios: those still wanted and those deleted. */
  const live = new Map<string, string>();
  const deleted = new Map<string, string>();
  /** Ready samples of the node (undefined: no answer, e.g. while the API server is stopped). */
  const samples: { at: number; ready: string | undefined }[] = [];
  let sampling = true;
  let sampler: Promise<void> | undefined;

  before(async () => {
    const server = new URL(env.kube.server);
    kubeProxy = await startDelayProxy({ host: server.hostname, port: Number(server.port) });
    dynamoProxy = await startDynamoFaultProxy(env.dynamodb.endpoint);
    h = await PipelineHarness.start({
      environment: env,
      provider: mockProviderSetup(),
      nodePrefix: 'faults',
      env: {
        SVK_KUBECONFIG: kubeconfigThrough(env.kube.kubeletKubeconfig, kubeProxy.address),
        SVK_DYNAMODB_ENDPOINT: dynamoProxy.endpoint,
      },
    });
    namespace = await h.namespace('faults');
    const harness = h;
    sampler = (async () => {
      while (sampling) {
        const at = Date.now();
        const node = await harness.admin.core.readNode({ name: harness.node }).catch(() => undefined);
        samples.push({ at, ready: node ? readyStatus(node) : undefined });
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_000 - (Date.now() - at))));
      }
    })();
  });

  after(async () => {
    if (stopped !== undefined) process.kill(stopped, 'SIGCONT');
    sampling = false;
    await sampler;
    if (kubeProxy) kubeProxy.delayMs = 0;
    if (dynamoProxy) dynamoProxy.refuse = undefined;
    h?.deployment.bus.failEntries(undefined);
    await h?.stop();
    await kubeProxy?.stop();
    await dynamoProxy?.stop();
  });

  const harness = () => {
    assert.ok(h);
    return h;
  };

  async function createPods(count: number): Promise<void> {
    const hh = harness();
    for (let i = 0; i < count; i++) {
      const name = `p${seq++}`;
      const body: V1Pod = {
        metadata: { name },
        spec: hh.pods.spec({
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'main', command: ['sleep', '3600'] }],
        }),
      };
      const created = await hh.pods.create(namespace, body);
      live.set(name, created.metadata?.uid ?? '');
    }
  }

  async function deletePods(count: number): Promise<void> {
    for (const [name, uid] of [...live].slice(0, count)) {
      await harness().pods.delete(namespace, name);
      live.delete(name);
      deleted.set(name, uid);
    }
  }

  /** What is not yet as wanted: live pods not Running or not held, deleted ones still anywhere. */
  async function unsettled(): Promise<string[]> {
    const hh = harness();
    const api = new Map((await hh.pods.list(namespace)).map((p) => [p.metadata?.name ?? '', p]));
    const held = new Set((await hh.probe.pods(hh.node)).map((p) => p.uid));
    const wrong: string[] = [];
    for (const [name, uid] of live) {
      const pod = api.get(name);
      if (pod?.metadata?.uid !== uid || pod.status?.phase !== 'Running') wrong.push(`${name} not Running`);
      if (!held.has(uid)) wrong.push(`${name} not in the provider`);
    }
    for (const [name, uid] of deleted) {
      if (api.get(name)?.metadata?.uid === uid) wrong.push(`${name} still in the API server`);
      if (held.has(uid)) wrong.push(`${name} still in the provider`);
    }
    return wrong;
  }

  async function converged(what: string): Promise<number> {
    const from = Date.now();
    let last: string[] = [];
    await waitFor(
      async () => {
        last = await unsettled();
        return last.length === 0;
      },
      { timeoutMs: CONVERGE_MS, intervalMs: 1_000, what: `${what}: converged (${last.join(', ')})` },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; unsettled: ${last.join(', ')}`);
    });
    return (Date.now() - from) / 1000;
  }

  async function createdTwice(): Promise<string[]> {
    const hh = harness();
    const twice: string[] = [];
    for (const [name, uid] of [...live, ...deleted]) {
      const history = await hh.probe.history({ namespace, name, uid });
      if ((history?.creates ?? 0) > 1) twice.push(name);
    }
    return twice;
  }

  /** Where a scenario starts: the time, and how the invocations had ended so far. */
  interface Mark {
    at: number;
    invocations: Record<string, number>;
  }
  const mark = (): Mark => ({ at: Date.now(), invocations: harness().invocations.snapshot() });

  /** The checks every scenario ends with, over the samples and invocations since `since`. */
  async function healthy(t: { diagnostic(message: string): void }, since: Mark): Promise<void> {
    const window = samples.filter((s) => s.at >= since.at);
    const notReady = window.filter((s) => s.ready !== undefined && s.ready !== 'True');
    t.diagnostic(`${window.length} Ready samples, ${notReady.length} not Ready`);
    assert.deepEqual(notReady, [], 'the node never left Ready');
    assert.deepEqual(await createdTwice(), [], 'no pod created twice');
    const timedOut = Object.entries(harness().invocations.snapshot()).filter(
      ([k, n]) => k.endsWith(' timeout') && n > (since.invocations[k] ?? 0),
    );
    assert.deepEqual(timedOut, [], 'no invocation outlived its timeout');
  }

  it('converges while kube-apiserver answers slowly (500 ms each way)', {
    timeout: 4 * 60_000,
  }, async (t) => {
    assert.ok(kubeProxy);
    await createPods(2);
    await converged('before the fault');
    const since = mark();
    // The functions reach the API server through the proxy, the harness's assertions directly.
    assert.ok(kubeProxy.connections > 0, 'the functions connect through the proxy');
    kubeProxy.delayMs = 500;
    try {
      await createPods(2);
      await deletePods(1);
      t.diagnostic(`converged ${await converged('under a slow API server')} s into the fault`);
    } finally {
      kubeProxy.delayMs = 0;
    }
    await healthy(t, since);
  });

  it(`converges within 2 min after kube-apiserver stalls (SIGSTOP) for ${STALL_MS / 1000} s`, {
    timeout: 5 * 60_000,
  }, async (t) => {
    await createPods(2);
    await deletePods(1);
    const since = mark();
    stopped = apiServerPid();
    process.kill(stopped, 'SIGSTOP');
    // The fault itself: the scenario is defined as an API server silent for this long.
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    process.kill(stopped, 'SIGCONT');
    stopped = undefined;
    const lease = await waitFor(
      async () => {
        const l = await harness().admin.coordination.readNamespacedLease({
          namespace: 'kube-node-lease',
          name: harness().node,
        });
        return new Date(l.spec?.renewTime ?? 0).getTime() > since.at + STALL_MS ? l : undefined;
      },
      { timeoutMs: 20_000, what: 'a lease renewal after the SIGCONT' },
    );
    assert.ok(lease);
    t.diagnostic(`converged ${await converged('after the stall')} s after the SIGCONT`);
    await healthy(t, since);
  });

  /**
   * Puts `refuse` on the DynamoDB proxy, creates and deletes pods, keeps
   * the fault on until it has refused `refusals` requests, lifts it, and
   * waits for convergence.
   */
  async function underDynamoFault(
    t: { diagnostic(message: string): void },
    refuse: DynamoFaultProxy['refuse'],
    refusals: number,
  ): Promise<void> {
    assert.ok(dynamoProxy);
    const proxy = dynamoProxy;
    proxy.refused.clear();
    const refused = () => [...proxy.refused.values()].reduce((a, n) => a + n, 0);
    proxy.refuse = refuse;
    try {
      await createPods(2);
      await deletePods(2);
      await waitFor(() => refused() >= refusals, {
        timeoutMs: 90_000,
        intervalMs: 500,
        what: `${refusals} DynamoDB requests refused`,
      });
    } finally {
      proxy.refuse = undefined;
    }
    t.diagnostic(`refused ${refused()}: ${JSON.stringify(Object.fromEntries(proxy.refused))}`);
    t.diagnostic(`converged ${await converged('after the fault')} s after it ended`);
  }

  it('converges after DynamoDB throttling, retried by the AWS SDK (half the requests refused)', {
    timeout: 5 * 60_000,
  }, async (t) => {
    const since = mark();
    let turn = 0;
    // Both of DynamoDB's throttling errors, in turn.
    await underDynamoFault(
      t,
      refuseAtRate(0.5, () =>
        throttled(turn++ % 2 === 0 ? 'ProvisionedThroughputExceededException' : 'ThrottlingException'),
      ),
      40,
    );
    await healthy(t, since);
  });

  it('converges after DynamoDB transaction conflicts (half the writes refused)', {
    timeout: 5 * 60_000,
  }, async (t) => {
    const since = mark();
    await underDynamoFault(
      t,
      refuseAtRate(0.5, transactionConflict, { filter: (r) => WRITE_OPERATIONS.has(r.operation) }),
      10,
    );
    await healthy(t, since);
  });

  it('converges when PutEvents refuses every other entry', { timeout: 4 * 60_000 }, async (t) => {
    const bus = harness().deployment.bus;
    const since = mark();
    let entries = 0;
    let refused = 0;
    bus.failEntries(() => entries++ % 2 === 0 && ++refused > 0, 'ThrottlingException');
    try {
      await createPods(2);
      await deletePods(2);
      t.diagnostic(`converged ${await converged('under partial PutEvents failure')} s into the fault`);
    } finally {
      bus.failEntries(undefined);
    }
    t.diagnostic(`${refused} of ${entries} entries refused`);
    assert.ok(refused >= 2, `the bus refused ${refused} entries`);
    await healthy(t, since);
  });
  it('converges after the serving certificate is rotated under warm functions', {
    timeout: 5 * 60_000,
  }, async (t) => {
    assert.ok(kubeProxy);
    const since = mark();
    const rotated = await rotateServingCertificate({
      controlPlaneDir: env.controlPlaneDir,
      server: env.kube.server,
      caFile: env.kube.ca.cert,
    });
    t.diagnostic(
      `serving ${rotated.after} instead of ${rotated.before} ${rotated.reloadMs} ms after the files changed`,
    );
    const connections = kubeProxy.connections;
    kubeProxy.resetConnections();
    await createPods(2);
    await deletePods(1);
    t.diagnostic(`converged ${await converged('after the rotation')} s after it`);
    assert.ok(kubeProxy.connections > connections, 'the functions connected again, to the new certificate');
    await healthy(t, since);
  });
});
