/**
 * The tick cadence against the real control plane: the tick function in the
 * local runtime behind the in-process SQS FIFO queue (queue-level delay of
 * one renew interval, visibility timeout just above the function's timeout)
 * and its event source mapping, with the keeper schedule, as serverless.yml
 * deploys them. The node lifecycle controller in kube-controller-manager
 * judges the leases; the garbage collector removes a deleted Node's lease.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Watch } from '@kubernetes/client-node';
import { TICK_TIMEOUT_MS } from '../../lib/local/cadence.ts';
import type { LambdaHandler } from '../../lib/local/lambda-function.ts';
import type { InvocationResult } from '../../lib/local/lambda-runtime.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import type { TickResult } from '../../lib/node/node-controller.ts';
import { NODE_LEASE_NAMESPACE } from '../../lib/node/node-lease.ts';
import type { TickRunResult } from '../../lib/tick/tick-entry.ts';
import {
  adminClients,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  readLease,
  readNode,
  readyAndUntainted,
  readyStatus,
  sampleNode,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const admin = adminClients();
const deployments: LocalDeployment[] = [];
const nodes: string[] = [];

after(async () => {
  await Promise.all(deployments.map((d) => d.stop({ abortRunning: true })));
  await Promise.all(nodes.map((n) => deleteNodeAndLease(admin, n)));
});

interface Finished {
  requestId: string;
  result: InvocationResult;
}

/** A deployment of one node at the tick cadence, its tick invocations recorded as they finish. */
async function tickDeployment(
  options: { rateMs?: number; env?: Record<string, string>; sandboxes?: 'host-process' } = {},
) {
  const { name: tableName, table } = await freshTable();
  const node = uniqueName('tick');
  nodes.push(node);
  const finished: Finished[] = [];
  const deployment = new LocalDeployment({
    env: functionEnv(tableName, { SVK_NODE_NAMES: node, ...options.env }),
    ...(options.rateMs ? { rateMs: options.rateMs } : {}),
    ...(options.sandboxes ? { sandboxes: options.sandboxes } : {}),
    onResult: (invocation, result) => {
      if (invocation.functionName === 'tick') {
        finished.push({ requestId: invocation.requestId, result });
      }
    },
  });
  deployments.push(deployment);
  const ticks = () =>
    finished.flatMap((f) =>
      f.result.status === 'ok' && (f.result.result as TickRunResult).trigger === 'chain'
        ? [f.result.result as TickRunResult]
        : [],
    );
  return { node, table, deployment, finished, ticks };
}

async function waitReady(node: string): Promise<void> {
  await waitFor(async () => readyAndUntainted(await readNode(admin, node)), {
    timeoutMs: 90_000,
    what: `${node} Ready`,
  });
}

/** Counts the lease's writes from now on, seen by a watch. */
async function leaseWrites(node: string) {
  const writes: string[] = [];
  const from = (await readLease(admin, node))?.metadata?.resourceVersion;
  const controller = await new Watch(admin.config).watch(
    `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`,
    { fieldSelector: `metadata.name=${node}`, resourceVersion: from },
    (type) => writes.push(type),
    () => undefined,
  );
  return { writes, stop: () => controller.abort() };
}

describe('the tick cadence', { concurrency: true }, () => {
  it('keeps a node Ready with one lease renewal per tick, each tick queueing the next', {
    timeout: 10 * 60_000,
  }, async () => {
    const d = await tickDeployment();
    d.deployment.start();
    await waitReady(d.node);
    const sampler = sampleNode(admin, d.node);
    const lease = await leaseWrites(d.node);
    const before = d.ticks().length;
    await waitFor(() => d.ticks().length >= before + 4, {
      timeoutMs: 3 * 60_000,
      intervalMs: 500,
      what: 'four more ticks',
    });
    // The lease write of the last tick may still be on its way through the watch.
    await waitFor(() => lease.writes.length >= 3, { timeoutMs: 30_000, what: 'three lease writes' });
    lease.stop();
    const samples = await sampler.stop();
    const ticks = d.ticks().slice(before);
    assert.deepEqual(
      samples.filter((s) => s.ready !== 'True'),
      [],
      'the node never left Ready',
    );
    for (const t of ticks) {
      assert.equal(t.gate, 'act');
      assert.ok(t.successor !== undefined && t.slot !== undefined && t.successor > t.slot, JSON.stringify(t));
    }
    // Each tick's successor is the next tick's slot: one chain.
    for (let i = 1; i < ticks.length; i++) assert.equal(ticks[i]?.slot, ticks[i - 1]?.successor);
    assert.ok(
      lease.writes.every((w) => w === 'MODIFIED'),
      `the lease is only renewed: ${lease.writes.join(',')}`,
    );
    assert.ok(
      lease.writes.length <= ticks.length + 1,
      `${lease.writes.length} lease writes for ${ticks.length} ticks`,
    );
  });

  it('sends one request per tick for the node once it runs: the lease renewal, and the status write when due', {
    timeout: 10 * 60_000,
  }, async () => {
    // Status due every 20 s (every second or third tick), so the window sees both kinds of tick.
    const d = await tickDeployment({ env: { SVK_NODE_STATUS_INTERVAL_SECONDS: '20' } });
    d.deployment.start();
    await waitReady(d.node);
    const heartbeatOf = (t: TickRunResult) => {
      const results = t.parts.heartbeat;
      assert.ok(Array.isArray(results), `heartbeat results: ${JSON.stringify(results)}`);
      const [result] = results as TickResult[];
      assert.ok(result && result.node === d.node, JSON.stringify(results));
      return result;
    };
    // From the second chain tick on: the keeper's start of the chain may have started the node.
    const from = Math.max(2, d.ticks().length);
    await waitFor(() => d.ticks().length >= from + 6, {
      timeoutMs: 3 * 60_000,
      intervalMs: 500,
      what: 'six more ticks',
    });
    // One warm sandbox runs every tick here, so a node's request count goes on from tick to tick.
    const steady = d
      .ticks()
      .slice(from - 1, from + 6)
      .map(heartbeatOf);
    const perTick = steady.slice(1).map((r, i) => ({
      requests: r.requests - (steady[i]?.requests ?? 0),
      statusWritten: r.statusWritten,
      leaseRenewed: r.leaseRenewed,
    }));
    assert.ok(
      perTick.every((t) => t.leaseRenewed && t.requests === 1 + (t.statusWritten ? 1 : 0)),
      `no read of the Node or the Lease: ${JSON.stringify(perTick)}`,
    );
    assert.ok(
      perTick.some((t) => t.statusWritten),
      'a status write came due in the window',
    );
    assert.ok(
      perTick.some((t) => !t.statusWritten),
      'and ticks without one',
    );
  });

  it('stays Ready when a tick is killed: the queue delivers its message again after the visibility timeout', {
    timeout: 10 * 60_000,
  }, async () => {
    const d = await tickDeployment();
    d.deployment.start();
    await waitReady(d.node);
    const sampler = sampleNode(admin, d.node);
    // Kill the next tick the moment it starts, before it renews anything.
    const killed = await waitFor(
      () => {
        const running = d.deployment.runtime.running('tick')[0];
        if (!running) return undefined;
        running.crash('killed by the test');
        return running.requestId;
      },
      { timeoutMs: 60_000, intervalMs: 5, what: 'a tick to start' },
    );
    const crashed = d.finished.length;
    const redelivered = await waitFor(
      () =>
        d.deployment.tickChain?.queue.peek().find((m) => m.receiveCount >= 2) ??
        d.finished.slice(crashed).find((f) => f.result.status === 'ok'),
      { timeoutMs: 60_000, intervalMs: 200, what: 'the killed tick delivered again' },
    );
    await waitFor(() => d.ticks().length >= 3, { timeoutMs: 60_000, what: 'the chain to go on' });
    const samples = await sampler.stop();
    assert.ok(killed && redelivered);
    assert.ok(
      d.finished.some((f) => f.requestId === killed && f.result.status === 'crashed'),
      'the tick was killed',
    );
    assert.deepEqual(
      samples.filter((s) => s.ready !== 'True'),
      [],
      'the node never left Ready',
    );
  });

  it('sets Ready back after the node controller marked it Unknown: the first renewal after a long gap writes the status', {
    timeout: 10 * 60_000,
  }, async () => {
    // Host-process sandboxes: the tick's handler can be swapped while its warm sandbox (and what its
    // node controller remembers, such as the status it last wrote) lives on.
    const d = await tickDeployment({ sandboxes: 'host-process' });
    const host = d.deployment.host;
    assert.ok(host);
    const register = (handler: LambdaHandler) =>
      d.deployment.runtime.register({ name: 'tick', handler, timeoutMs: TICK_TIMEOUT_MS });
    d.deployment.start();
    await waitReady(d.node);
    await waitFor(() => d.ticks().length >= 2, { timeoutMs: 60_000, what: 'the sandbox warm' });
    // Every tick fails (as when nothing reaches the API server) until the node lifecycle controller
    // has marked the node Ready=Unknown, its lease unrenewed past the grace period.
    register(async () => {
      throw new Error('tick failing (the test)');
    });
    await waitFor(async () => readyStatus(await readNode(admin, d.node)) === 'Unknown', {
      timeoutMs: 3 * 60_000,
      what: 'the node controller to mark the node Ready=Unknown',
    });
    const okBefore = d.ticks().length;
    register(host.handler('tick'));
    await waitFor(() => d.ticks().length > okBefore, {
      timeoutMs: 60_000,
      what: 'a tick of the warm sandbox',
    });
    // The status interval (300 s) is far off: only the owed status write can set Ready back this soon.
    await waitFor(async () => readyStatus(await readNode(admin, d.node)) === 'True', {
      timeoutMs: 60_000,
      what: 'Ready True again within a few ticks of the renewals resuming',
    });
    assert.equal(host.coldStarts, 1, 'the same warm sandbox throughout');
  });

  it('registers the Node again after it is deleted: the garbage collector removes its lease, the next renewal finds it gone', {
    timeout: 5 * 60_000,
  }, async () => {
    const d = await tickDeployment();
    d.deployment.start();
    await waitReady(d.node);
    const oldUid = (await readNode(admin, d.node))?.metadata?.uid;
    await waitFor(
      async () => (await readLease(admin, d.node))?.metadata?.ownerReferences?.[0]?.uid === oldUid,
      { timeoutMs: 30_000, what: 'the lease owned by the node' },
    );
    await admin.core.deleteNode({ name: d.node });
    const back = await waitFor(
      async () => {
        const node = await readNode(admin, d.node);
        return node?.metadata?.uid && node.metadata.uid !== oldUid ? node : undefined;
      },
      { timeoutMs: 60_000, what: 'the node registered again' },
    );
    const lease = await waitFor(
      async () => {
        const l = await readLease(admin, d.node);
        return l?.metadata?.ownerReferences?.[0]?.uid === back.metadata?.uid ? l : undefined;
      },
      { timeoutMs: 30_000, what: 'the lease owned by the new node' },
    );
    assert.equal(lease.metadata?.ownerReferences?.[0]?.kind, 'Node');
    await waitReady(d.node);
  });

  it('the keeper starts the chain again when the queue lost it', { timeout: 5 * 60_000 }, async () => {
    const d = await tickDeployment({ rateMs: 5_000 });
    d.deployment.start();
    await waitReady(d.node);
    const queue = d.deployment.tickChain?.queue;
    assert.ok(queue);
    await waitFor(() => d.ticks().length >= 1, { timeoutMs: 60_000, what: 'a first tick' });
    // A message in flight would queue its successor again: purge between ticks.
    await waitFor(
      () => {
        if (d.deployment.runtime.runningCount('tick') > 0 || queue.counts().inFlight > 0) return false;
        queue.purge();
        return true;
      },
      { timeoutMs: 30_000, intervalMs: 5, what: 'no tick running' },
    );
    const purgedAt = d.finished.length;
    const restarted = await waitFor(
      () =>
        d.finished
          .slice(purgedAt)
          .some((f) => f.result.status === 'ok' && (f.result.result as TickRunResult).chain === 'restarted'),
      { timeoutMs: 60_000, intervalMs: 200, what: 'the keeper to restart the chain' },
    );
    const chainTicks = d.ticks().length;
    await waitFor(() => d.ticks().length >= chainTicks + 2, {
      timeoutMs: 60_000,
      what: 'the restarted chain to tick',
    });
    assert.ok(restarted);
  });
});
