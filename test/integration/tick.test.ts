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
import { createTickHandler } from '../../functions/tick.ts';
import { TICK_TIMEOUT_MS } from '../../lib/local/cadence.ts';
import type { LambdaHandler } from '../../lib/local/lambda-function.ts';
import type { InvocationResult } from '../../lib/local/lambda-runtime.ts';
import { createLocalBusPublisher } from '../../lib/local/local-bus-publisher.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { createLocalTickQueue } from '../../lib/local/queue-event-source.ts';
import type { NodeRoundResult } from '../../lib/node/node-controller.ts';
import { NODE_LEASE_NAMESPACE } from '../../lib/node/node-lease.ts';
import type { TickOptions, TickRunResult } from '../../lib/tick/tick-entry.ts';
import { TickParts } from '../../lib/tick/tick-parts.ts';
import { TICK_MESSAGE_GROUP } from '../../lib/tick/tick-slot.ts';
import {
  adminClients,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  functionKubeconfigs,
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

const samplers: Array<ReturnType<typeof sampleNode>> = [];

/** Samples the node's Ready condition every second until stopped (by the test, or after all of them). */
function sample(node: string): ReturnType<typeof sampleNode> {
  const sampler = sampleNode(admin, node);
  samplers.push(sampler);
  return sampler;
}

after(async () => {
  await Promise.all(samplers.map((s) => s.stop()));
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
  const env = functionEnv(tableName, { SVK_NODE_NAMES: node, ...options.env });
  const deployment = new LocalDeployment({
    env,
    // Each function as its own user (infra/rbac.yaml), unless the test chose a kubeconfig.
    ...(options.env?.SVK_KUBECONFIG ? {} : { kubeconfigs: functionKubeconfigs() }),
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
  return { node, env, table, deployment, finished, ticks };
}

type TickDeployment = Awaited<ReturnType<typeof tickDeployment>>;

/** The deployment's tick function replaced by `handler` (a cold start of its own), before or while it runs. */
function replaceTick(d: TickDeployment, handler: LambdaHandler): void {
  d.deployment.runtime.register({ name: 'tick', handler, timeoutMs: TICK_TIMEOUT_MS });
}

/** A tick handler of the deployment's configuration, queue and bus, with `options` beside. */
function tickHandler(d: TickDeployment, options: Pick<TickOptions, 'parts'> = {}): LambdaHandler {
  const queue = d.deployment.tickChain?.queue;
  assert.ok(queue);
  return createTickHandler(d.env, {
    queue: createLocalTickQueue(queue),
    publisher: createLocalBusPublisher(d.deployment.bus),
    ...options,
  });
}

/**
 * Waits for `count` chain ticks after the first `from`, then checks that
 * one chain runs: each of those ticks' slot is the previous one's successor,
 * no slot was ticked twice, and, between two ticks, the queue holds one
 * message of the chain (besides those in `ignore`).
 */
async function oneChainAfter(d: TickDeployment, from: number, count = 4, ignore: string[] = []) {
  await waitFor(() => d.ticks().length >= from + count, {
    timeoutMs: 3 * 60_000,
    intervalMs: 500,
    what: `${count} more chain ticks`,
  });
  const ticks = d.ticks().slice(from);
  for (let i = 1; i < ticks.length; i++) {
    assert.equal(ticks[i]?.slot, ticks[i - 1]?.successor, `one chain: ${JSON.stringify(ticks)}`);
  }
  const slots = d.ticks().map((t) => t.slot);
  assert.equal(new Set(slots).size, slots.length, `no slot ticked twice: ${slots.join(',')}`);
  const queue = d.deployment.tickChain?.queue;
  assert.ok(queue);
  await waitFor(
    () => {
      if (d.deployment.runtime.runningCount('tick') > 0) return false;
      const held = queue.peek().filter((m) => !ignore.includes(m.messageId));
      return held.length === 1 || undefined;
    },
    { timeoutMs: 30_000, intervalMs: 20, what: 'one message of the chain in the queue between two ticks' },
  );
}

function assertStayedReady(samples: Array<{ ready: string | undefined; leaseAgeMs?: number | undefined }>) {
  assert.deepEqual(
    samples.filter((s) => s.ready !== 'True'),
    [],
    'the node never left Ready',
  );
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
    const sampler = sample(d.node);
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
      const [result] = results as NodeRoundResult[];
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
    const sampler = sample(d.node);
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

describe('the tick chain under messages it cannot use', { concurrency: true }, () => {
  const bodies: Array<[string, string]> = [
    ['not JSON', '{"v":1,"slot":'],
    ['JSON of another schema version', JSON.stringify({ v: 2, slot: 1, epoch: 'e' })],
    ['an empty body', ''],
  ];
  for (const [what, body] of bodies) {
    it(`drops a message at the head of the chain's group that is ${what}: the lease is renewed throughout, and one chain goes on`, {
      timeout: 10 * 60_000,
    }, async () => {
      const d = await tickDeployment();
      d.deployment.start();
      await waitReady(d.node);
      await waitFor(() => d.ticks().length >= 1, { timeoutMs: 60_000, what: 'a first tick' });
      const queue = d.deployment.tickChain?.queue;
      assert.ok(queue);
      const sampler = sample(d.node);
      // Behind the chain's next message in its group: the head of the group once that one is processed.
      const { messageId } = queue.sendMessage({
        body,
        groupId: TICK_MESSAGE_GROUP,
        deduplicationId: `by-hand-${d.node}`,
      });
      await waitFor(() => !queue.peek().some((m) => m.messageId === messageId), {
        timeoutMs: 90_000,
        intervalMs: 200,
        what: 'the bad message gone from the queue',
      });
      const from = d.ticks().length;
      await oneChainAfter(d, from);
      assertStayedReady(await sampler.stop());
      const rejected = d.finished.flatMap((f) =>
        f.result.status === 'ok' ? ((f.result.result as TickRunResult).rejected ?? []) : [],
      );
      assert.deepEqual(
        rejected.map((r) => r.messageId),
        [messageId],
        'the bad message was received once, rejected and deleted',
      );
      assert.ok(
        d.finished.every((f) => f.result.status === 'ok'),
        `no tick invocation failed: ${JSON.stringify(d.finished.filter((f) => f.result.status !== 'ok'))}`,
      );
    });
  }

  it('a tick that fails after queueing its successor is not delivered again: the leases are renewed by one chain', {
    timeout: 10 * 60_000,
  }, async () => {
    const d = await tickDeployment();
    // Everything after the heartbeat fails in every tick (outside the parts, which catch their own errors).
    replaceTick(
      d,
      tickHandler(d, {
        parts: (deps, publisher) => {
          const parts = new TickParts(deps, publisher);
          return {
            heartbeat: (gate, names) => parts.heartbeat(gate, names),
            work: () => {
              throw new Error('the rest of the tick fails (the test)');
            },
          };
        },
      }),
    );
    d.deployment.start();
    await waitReady(d.node);
    const sampler = sample(d.node);
    await oneChainAfter(d, d.ticks().length, 5);
    assertStayedReady(await sampler.stop());
    const ticks = d.ticks();
    assert.ok(
      ticks.every((t) => t.error?.includes('(the test)')),
      `every tick failed after its successor: ${JSON.stringify(ticks.map((t) => t.error))}`,
    );
    assert.ok(
      d.finished.every((f) => f.result.status === 'ok'),
      'and every invocation succeeded, so that no message was delivered again',
    );
  });

  it('the keeper starts a chain in a group of its own when the head of the queue keeps failing', {
    timeout: 10 * 60_000,
  }, async () => {
    const d = await tickDeployment({ rateMs: 5_000 });
    const tick = tickHandler(d);
    let stuck: string | undefined;
    // A message whose every delivery fails, as one whose processing kept timing out would.
    replaceTick(d, async (event, context) => {
      const records = (event as { Records?: Array<{ messageId: string }> }).Records ?? [];
      if (stuck && records.some((r) => r.messageId === stuck)) throw new Error('stuck (the test)');
      return tick(event, context);
    });
    d.deployment.start();
    await waitReady(d.node);
    const queue = d.deployment.tickChain?.queue;
    assert.ok(queue);
    await waitFor(() => d.ticks().length >= 1, { timeoutMs: 60_000, what: 'a first tick' });
    const sampler = sample(d.node);
    await waitFor(
      () => {
        if (d.deployment.runtime.runningCount('tick') > 0 || queue.counts().inFlight > 0) return false;
        stuck = queue.peek()[0]?.messageId;
        return stuck !== undefined;
      },
      { timeoutMs: 30_000, intervalMs: 5, what: "the chain's next message, between two ticks" },
    );
    const marked = d.finished.length;
    await waitFor(
      () =>
        d.finished
          .slice(marked)
          .some((f) => f.result.status === 'ok' && (f.result.result as TickRunResult).restart === 'stale'),
      { timeoutMs: 90_000, intervalMs: 200, what: 'the keeper to start a chain beside the stuck one' },
    );
    assert.ok(stuck);
    await oneChainAfter(d, d.ticks().length, 4, [stuck]);
    assertStayedReady(await sampler.stop());
    const held = queue.peek();
    assert.ok(
      held.some((m) => m.messageId === stuck && m.groupId === TICK_MESSAGE_GROUP && m.receiveCount >= 2),
      'the stuck message still fails in its group',
    );
    assert.ok(
      held.some((m) => m.messageId !== stuck && m.groupId.startsWith('restart-')),
      `the chain goes on in a group of its own: ${JSON.stringify(held)}`,
    );
  });
});
