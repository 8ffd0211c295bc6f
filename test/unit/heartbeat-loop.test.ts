/**
 * The heartbeat loop's liveness without DynamoDB, on a fake clock with an
 * in-memory lock store that can be made unreachable: whatever the store
 * does, some call renews the Leases at least every renew interval (plus
 * one poll); while it cannot be reached the renewals are lease-only
 * (keepAlive), and the full ticks come back with the store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LockConflictError,
  type LockRecord,
  type LockStore,
  type LockTurn,
  type LockTurnOutcome,
  turnEpoch,
} from '../../lib/lock/lock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { type HeartbeatOptions, runHeartbeat } from '../../lib/node/heartbeat-loop.ts';
import type { HeartbeatNode } from '../../lib/node/heartbeat-round.ts';
import type { NodeRoundResult } from '../../lib/node/node-controller.ts';
import type { ReleaseRefused } from '../../lib/release/gate.ts';
import { FakeClock } from '../support/fake-clock.ts';

const RENEW_MS = 10_000;
const TTL_MS = 15_000;
const POLL_MS = 1_000;

class MemoryLockStore implements LockStore {
  record: LockRecord | undefined;
  down = false;

  #reach(): Promise<void> {
    return this.down
      ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
      : Promise.resolve();
  }

  async get(): Promise<LockRecord | undefined> {
    await this.#reach();
    return this.record ? { ...this.record } : undefined;
  }

  async create(record: LockRecord): Promise<void> {
    await this.#reach();
    if (this.record) throw new LockConflictError('exists');
    this.record = { ...record };
  }

  async replaceIfVersion(expectedRvn: string, next: LockRecord): Promise<void> {
    await this.#reach();
    if (this.record?.rvn !== expectedRvn) throw new LockConflictError('changed');
    this.record = { ...next };
  }

  async replaceIfHeld(owner: string, epoch: number, next: LockRecord): Promise<void> {
    await this.#reach();
    if (this.record?.owner !== owner || this.record.epoch !== epoch) throw new LockConflictError('not held');
    this.record = { ...next };
  }

  async advance(turn: LockTurn): Promise<LockTurnOutcome> {
    await this.#reach();
    const epoch = turnEpoch(this.record, turn.owner);
    if (epoch === undefined && this.record) return { heldBy: { ...this.record } };
    this.record = { ...turn, epoch: epoch ?? 1 };
    return { taken: { ...this.record } };
  }
}

interface Call {
  at: number;
  kind: 'tick' | 'keepAlive';
}

/** A node that records when it was ticked or kept alive. */
function recordingNode(clock: FakeClock, calls: Call[]): HeartbeatNode {
  const result = (): NodeRoundResult => ({
    node: 'vk-1',
    leaseRenewed: true,
    statusWritten: false,
    requests: 0,
  });
  return {
    name: 'vk-1',
    round: async () => {
      calls.push({ at: clock.monotonic(), kind: 'tick' });
      return result();
    },
    keepAlive: async () => {
      calls.push({ at: clock.monotonic(), kind: 'keepAlive' });
      return result();
    },
  };
}

function start(store: MemoryLockStore, options: { releaseGate?: HeartbeatOptions['releaseGate'] } = {}) {
  const clock = new FakeClock();
  const calls: Call[] = [];
  let degraded = 0;
  const running = runHeartbeat({
    lockStore: store,
    nodes: [recordingNode(clock, calls)],
    clock,
    log: createLogger({ level: 'silent' }),
    invocation: {
      requestId: 'r1',
      functionName: 'heartbeat',
      deadline: clock.monotonic() + 130_000,
      signal: new AbortController().signal,
    },
    renewIntervalMs: RENEW_MS,
    lockTtlMs: TTL_MS,
    lockPollMs: POLL_MS,
    maxParallel: 4,
    stopBeforeDeadlineMs: 5_000,
    nodeTimeoutMs: 20_000,
    onRound: (_results, wasDegraded) => {
      if (wasDegraded) degraded++;
    },
    ...options,
  });
  /** Moves the fake time on in small steps, letting the loop run between them, until `at`. */
  const until = async (at: number) => {
    while (clock.monotonic() < at) await clock.advance(250);
  };
  return { clock, calls, running, until, degraded: () => degraded };
}

/** The longest time without a lease renewal (tick or keepAlive) between `from` and `to`. */
function longestGap(calls: Call[], from: number, to: number): number {
  const times = [from, ...calls.map((c) => c.at).filter((t) => t >= from && t <= to), to];
  return Math.max(...times.slice(1).map((t, i) => t - (times[i] ?? t)));
}

describe('heartbeat loop without DynamoDB', () => {
  it('a cold start that never reaches the store renews the leases from one TTL on, every interval, lease-only', async () => {
    const store = new MemoryLockStore();
    store.down = true;
    const h = start(store);
    await h.until(130_000);
    const result = await h.running;
    assert.equal(result.role, 'standby');
    assert.ok(
      h.calls.every((c) => c.kind === 'keepAlive'),
      'no full tick without the lock',
    );
    const first = h.calls[0]?.at ?? Number.POSITIVE_INFINITY;
    assert.ok(first >= TTL_MS && first <= TTL_MS + 2 * POLL_MS, `first renewal at ${first} ms`);
    assert.ok(longestGap(h.calls, first, 125_000) <= RENEW_MS + POLL_MS, 'then every interval');
    assert.equal(result.degradedRounds, h.calls.length);
    assert.equal(h.degraded(), h.calls.length, 'each degraded round counted');
  });

  it('a holder whose store goes away keeps renewing the leases, lease-only once its lock expired, and returns to the lock', async () => {
    const store = new MemoryLockStore();
    const h = start(store);
    await h.until(30_000);
    store.down = true;
    await h.until(80_000);
    store.down = false;
    await h.until(130_000);
    const result = await h.running;
    assert.equal(result.role, 'holder');
    assert.equal(result.stopped, 'deadline');
    assert.ok(longestGap(h.calls, 0, 125_000) <= RENEW_MS + POLL_MS, `leases renewed throughout`);
    const kinds = (from: number, to: number) =>
      new Set(h.calls.filter((c) => c.at >= from && c.at < to).map((c) => c.kind));
    assert.deepEqual([...kinds(0, 30_000)], ['tick']);
    assert.deepEqual([...kinds(50_000, 80_000)], ['keepAlive'], 'lease-only once the lock expired');
    assert.deepEqual([...kinds(95_000, 125_000)], ['tick'], 'full ticks again with the store');
    assert.ok(result.degradedRounds >= 2);
    assert.equal(store.record?.owner, undefined, 'released at the deadline');
  });

  it('a store blip shorter than the lock TTL changes nothing for a standby', async () => {
    const store = new MemoryLockStore();
    store.record = { name: 'heartbeat', owner: 'other', epoch: 1, rvn: 'a', ttlMs: TTL_MS, updatedAt: '' };
    const h = start(store);
    // Another holder renews every 5 s; the store is gone for 8 s in between.
    for (let t = 5_000; t <= 125_000; t += 5_000) {
      await h.until(t);
      if (t === 40_000) store.down = true;
      if (t === 45_000) {
        await h.until(48_000);
        store.down = false;
      }
      if (!store.down && store.record) store.record = { ...store.record, rvn: `r${t}` };
    }
    await h.until(130_000);
    const result = await h.running;
    assert.equal(result.role, 'standby');
    assert.deepEqual(h.calls, [], 'the live holder renews; the standby does not');
  });

  it('a holder that loses its lock to another stops at once', async () => {
    const store = new MemoryLockStore();
    const h = start(store);
    await h.until(20_000);
    assert.ok(store.record?.owner);
    // Taken over (as after this holder was frozen for a lock TTL), and the new holder keeps it alive.
    store.record = { ...store.record, owner: 'usurper', epoch: store.record.epoch + 1, rvn: 'u0' };
    for (let t = 25_000; t <= 125_000; t += 5_000) {
      await h.until(t);
      store.record = { ...store.record, rvn: `u${t}` };
    }
    await h.until(130_000);
    const result = await h.running;
    const after = h.calls.filter((c) => c.at > 26_000);
    assert.deepEqual(after, [], 'no tick and no keepAlive after losing the lock');
    assert.equal(result.stopped, 'lock-lost');
  });

  it('a refused release does nothing; an unreadable gate is an unreachable store', async () => {
    const refusal: ReleaseRefused = { refused: true, release: '1.0.0', reason: 'below the minimum' };
    const refused = start(new MemoryLockStore(), { releaseGate: async () => refusal });
    await refused.until(30_000);
    const r = await refused.running;
    assert.deepEqual(r.refusal, refusal);
    assert.deepEqual(refused.calls, []);

    const store = new MemoryLockStore();
    let gateUp = false;
    const h = start(store, {
      releaseGate: async () => {
        if (!gateUp) throw new Error('ProvisionedThroughputExceededException');
        return undefined;
      },
    });
    await h.until(40_000);
    assert.ok(h.calls.length > 0 && h.calls.every((c) => c.kind === 'keepAlive'));
    gateUp = true;
    await h.until(130_000);
    const result = await h.running;
    assert.equal(result.role, 'holder', 'acts once the gate can be read and lets it');
    assert.ok(h.calls.some((c) => c.kind === 'tick' && c.at > 40_000));
  });
});
