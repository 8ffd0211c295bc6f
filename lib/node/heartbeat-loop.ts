import { randomUUID } from 'node:crypto';
import { runWithTimeout } from '../deadline.ts';
import { settledValues } from '../lock/leader-loop.ts';
import { type LockHandle, LockLostError, LockManager } from '../lock/lock.ts';
import { HEARTBEAT_LOCK } from '../lock/lock-names.ts';
import type { ReleaseRefused } from '../release/gate.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import type { HeartbeatOptions, HeartbeatResult } from './heartbeat.ts';

/** Longest wait for one lock-store call before the store counts as unreachable for this try. */
const MAX_STORE_CALL_MS = 5_000;

type Reached<T> = { ok: true; value: T } | { ok: false; err: unknown };

/**
 * Liveness without DynamoDB. A kubelet's liveness depends on no database:
 * a NotReady node is tainted unreachable and its pods are evicted after
 * 300 s. Renewing a Kubernetes Lease twice is harmless, so the heartbeat
 * needs its DynamoDB lock only to avoid doubling the API requests and to
 * give one writer to what must happen once, never for the renewal itself:
 *
 * - As standby it polls the lock (every lockPollMs). When the lock store
 *   has not answered for one lock TTL, it renews every node's Lease each
 *   renew interval without the lock ("degraded": the node marked
 *   StateStoreUnavailable, logged, counted), until the store answers again.
 * - As holder it keeps renewing the Leases when its lock renewals fail: once
 *   the lock's TTL has run out it stops everything else (status, ping,
 *   labels, node config) and renews the Leases only, until a renewal of
 *   the lock succeeds (back to full rounds) or fails because another
 *   holder took it (it stops).
 * - A cold start in an outage (no lock ever read) is a standby that never
 *   reaches the store: after one TTL it renews the Leases of the Nodes that
 *   exist (it registers none) with the local config's intervals.
 *
 * Every lock-store call is cut off after a few seconds, so a hung
 * DynamoDB costs a renewal nothing. The release gate is read before the
 * lock is taken; a gate that cannot be read is an unreachable store.
 */
export class HeartbeatLoop {
  readonly #o: HeartbeatOptions;
  readonly #locks: LockManager;
  readonly #stopAt: number;
  readonly #budgetMs: number;
  readonly #result: HeartbeatResult = { role: 'standby', rounds: 0, degradedRounds: 0 };
  /** Monotonic time of the first failed store call of the current outage; undefined while it answers. */
  #failingSince: number | undefined;
  /** Wall time of the same, for the node condition. */
  #unavailableSince = new Date(0);
  #lastDegradedRound = Number.NEGATIVE_INFINITY;
  #gatePassed = false;
  #tried = false;

  constructor(options: HeartbeatOptions) {
    this.#o = options;
    this.#locks = new LockManager({
      store: options.lockStore,
      // Unique per invocation, also when a warm sandbox runs several at once.
      owner: `${options.invocation.requestId}/${randomUUID().slice(0, 8)}`,
      ttlMs: options.lockTtlMs,
      clock: options.clock,
    });
    this.#stopAt = options.invocation.deadline - options.stopBeforeDeadlineMs;
    this.#budgetMs = Math.min(MAX_STORE_CALL_MS, Math.max(1, Math.floor(options.lockTtlMs / 3)));
  }

  async run(): Promise<HeartbeatResult> {
    const { clock, log, invocation } = this.#o;
    while (!invocation.signal.aborted && clock.monotonic() < this.#stopAt) {
      // Taking the lock is worth it with one interval left to hold it, and always tried once.
      const acquiring = !this.#tried || clock.monotonic() < this.#stopAt - this.#o.renewIntervalMs;
      this.#tried = true;
      const tried = await this.#reach(() => this.#tryAcquire(acquiring));
      if (!tried.ok) {
        await this.#standByDegraded();
        continue;
      }
      if (tried.value && 'refused' in tried.value) {
        this.#result.refusal = tried.value;
        break;
      }
      if (tried.value) {
        await this.#hold(tried.value);
        if (this.#result.stopped !== 'lock-lost') break;
        continue;
      }
      if (!acquiring) break;
      await this.#pause(this.#o.lockPollMs);
    }
    if (this.#result.role === 'standby' && !this.#result.refusal)
      log.info({ lock: HEARTBEAT_LOCK, degradedRounds: this.#result.degradedRounds }, 'stood by');
    return this.#result;
  }

  /** One try at the lock, after the release gate: a handle, undefined while another holds it, or the refusal. */
  async #tryAcquire(acquiring: boolean): Promise<LockHandle | undefined | ReleaseRefused> {
    if (!this.#gatePassed && this.#o.releaseGate) {
      const refusal = await this.#o.releaseGate();
      if (refusal) return refusal;
      this.#gatePassed = true;
    }
    if (!acquiring) {
      // Past the time worth taking the lock: only learn whether the store answers.
      await this.#o.lockStore.get(HEARTBEAT_LOCK);
      return undefined;
    }
    return this.#locks.tryAcquire(HEARTBEAT_LOCK);
  }

  /** A failed try: a degraded round when due, then the next try after one poll. */
  async #standByDegraded(): Promise<void> {
    const { clock, lockTtlMs, renewIntervalMs, lockPollMs } = this.#o;
    const failingFor = clock.monotonic() - (this.#failingSince ?? clock.monotonic());
    if (failingFor >= lockTtlMs && clock.monotonic() - this.#lastDegradedRound >= renewIntervalMs) {
      await this.#degradedRound();
    }
    await this.#pause(lockPollMs);
  }

  /** Holds the lock: full rounds while it is valid, degraded rounds while the store cannot renew it. */
  async #hold(handle: LockHandle): Promise<void> {
    const { clock, log, invocation, renewIntervalMs } = this.#o;
    this.#announce(handle);
    this.#result.role = 'holder';
    this.#result.epoch = handle.epoch;
    const lost = new AbortController();
    const stop = AbortSignal.any([
      invocation.signal,
      lost.signal,
      AbortSignal.timeout(Math.max(0, Math.floor(this.#stopAt - clock.monotonic()))),
    ]);
    const keeper = this.#keepLock(handle, stop, lost);
    try {
      while (!stop.aborted) {
        const started = clock.monotonic();
        // The TTL ran out without a renewal: try once more now, so that a holder that was only
        // slow (or frozen) learns at once whether it still holds the lock.
        if (!this.#locks.isValid(handle)) {
          const renewed = await this.#reach(() => this.#locks.renew(handle));
          if (!renewed.ok && renewed.err instanceof LockLostError) {
            lost.abort(renewed.err);
            break;
          }
        }
        if (this.#locks.isValid(handle)) await this.#fullRound(stop);
        else await this.#degradedRound(stop);
        const next = started + renewIntervalMs;
        if (next >= this.#stopAt) break;
        await clock.sleep(next - clock.monotonic(), stop).catch(() => {});
      }
    } finally {
      this.#result.stopped = lost.signal.aborted
        ? 'lock-lost'
        : invocation.signal.aborted
          ? 'aborted'
          : 'deadline';
      lost.abort();
      await keeper;
      // A crashed or aborted invocation does not release: its lock goes stale instead.
      if (!invocation.signal.aborted) {
        const released = await this.#reach(() => this.#locks.release(handle));
        if (!released.ok) log.warn({ err: released.err }, 'release failed');
      }
    }
    log.info(
      {
        lock: HEARTBEAT_LOCK,
        epoch: handle.epoch,
        rounds: this.#result.rounds,
        stopped: this.#result.stopped,
      },
      'holder stopped',
    );
  }

  /**
   * Renews the lock every third of its TTL until `stop`. A renewal that fails
   * for want of the store is retried, the holder going on in degraded
   * rounds; losing the lock to another holder aborts `lost`.
   */
  async #keepLock(handle: LockHandle, stop: AbortSignal, lost: AbortController): Promise<void> {
    const { clock, log, lockTtlMs } = this.#o;
    const interval = Math.max(1, Math.floor(lockTtlMs / 3));
    while (!stop.aborted) {
      await clock.sleep(interval, stop).catch(() => {});
      if (stop.aborted) return;
      const wasFailing = this.#failingSince !== undefined;
      const renewed = await this.#reach(() => this.#locks.renew(handle));
      if (renewed.ok) continue;
      if (renewed.err instanceof LockLostError) {
        log.error(
          { err: renewed.err, lock: handle.name, epoch: handle.epoch },
          'lock lost: stopping at once',
        );
        lost.abort(renewed.err);
        return;
      }
      // The outage was logged when it began; every failed try of it is not news.
      if (wasFailing) log.debug({ err: renewed.err, lock: handle.name }, 'lock renewal failed');
    }
  }

  /** Every node's full tick (node config first, each bounded so a hung store delays nothing). */
  async #fullRound(stop: AbortSignal): Promise<void> {
    const { controllers, log, maxParallel } = this.#o;
    const { beforeRound } = this.#o;
    // Bounded like a store call, but not a reachability probe: it never throws and may answer from memory.
    if (beforeRound) await runWithTimeout(this.#budgetMs, beforeRound).catch(() => {});
    const results = settledValues(
      // A hung provider or store must not hold up the next round's renewal past the lease's duration.
      await mapSettledLimit(controllers, maxParallel, (c) =>
        runWithTimeout(this.#o.tickTimeoutMs, () => c.tick(stop)),
      ),
      controllers.map((c) => c.name),
      log,
      stop,
      'node heartbeat failed; retrying on the next tick',
    );
    this.#result.rounds++;
    this.#o.onTick?.(results);
  }

  /** Every node's Lease renewed without the lock, the node marked degraded. */
  async #degradedRound(stop?: AbortSignal): Promise<void> {
    const { controllers, log, maxParallel, clock } = this.#o;
    const signal = stop ?? this.#o.invocation.signal;
    this.#lastDegradedRound = clock.monotonic();
    const results = settledValues(
      await mapSettledLimit(controllers, maxParallel, (c) => c.keepAlive(signal, this.#unavailableSince)),
      controllers.map((c) => c.name),
      log,
      signal,
      'lease renewal without the lock failed; retrying on the next round',
    );
    this.#result.degradedRounds++;
    const renewed = results.filter((r) => r.leaseRenewed).length;
    this.#o.onDegraded?.(renewed);
    this.#o.onTick?.(results);
  }

  /** Runs a lock-store call (or the release gate) cut off after the budget. */
  async #reach<T>(call: () => Promise<T>): Promise<Reached<T>> {
    try {
      const value = await runWithTimeout(this.#budgetMs, call);
      this.#answered();
      return { ok: true, value };
    } catch (err) {
      // Losing the lock is an answer from the store, not a failure to reach it; nor is the
      // invocation's own end a sign of the store.
      if (err instanceof LockLostError) this.#answered();
      else if (!this.#o.invocation.signal.aborted) this.#failed(err);
      return { ok: false, err };
    }
  }

  #failed(err: unknown): void {
    if (this.#failingSince !== undefined) return;
    this.#failingSince = this.#o.clock.monotonic();
    this.#unavailableSince = new Date(this.#o.clock.now());
    this.#o.log.warn(
      { err, lock: HEARTBEAT_LOCK },
      'lock store unreachable: node leases are renewed without the lock until it answers (degraded)',
    );
  }

  #answered(): void {
    if (this.#failingSince === undefined) return;
    this.#failingSince = undefined;
    this.#o.log.info(
      { lock: HEARTBEAT_LOCK, degradedRounds: this.#result.degradedRounds },
      'lock store answers again: back to the lock',
    );
  }

  #announce(handle: LockHandle): void {
    const { log } = this.#o;
    if (handle.takenOverFrom === undefined) {
      log.info({ lock: HEARTBEAT_LOCK, epoch: handle.epoch }, 'lock acquired');
      return;
    }
    log.warn(
      { lock: HEARTBEAT_LOCK, epoch: handle.epoch, previousOwner: handle.takenOverFrom },
      'lock acquired from a holder that stopped renewing it',
    );
    this.#o.onLockTakeover?.(HEARTBEAT_LOCK);
  }

  async #pause(ms: number): Promise<void> {
    const wait = Math.min(ms, this.#stopAt - this.#o.clock.monotonic());
    if (wait > 0) await this.#o.clock.sleep(wait, this.#o.invocation.signal).catch(() => {});
  }
}

/**
 * One scheduled heartbeat invocation: as the holder of
 * the heartbeat lock, it ticks every node each renew interval with bounded
 * parallelism; while the lock store cannot be reached, holder and standby
 * alike keep renewing the nodes' Leases without the lock.
 */
export function runHeartbeat(options: HeartbeatOptions): Promise<HeartbeatResult> {
  return new HeartbeatLoop(options).run();
}
