import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Invocation } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import { type LockHandle, LockLostError, LockManager, type LockStore } from './lock.ts';

export interface LeaderLoopOptions {
  /** The lock that makes one invocation at a time act. */
  lock: string;
  lockStore: LockStore;
  clock: Clock;
  log: Logger;
  invocation: Invocation;
  lockTtlMs: number;
  lockPollMs: number;
  /** Time between the starts of two rounds. */
  intervalMs: number;
  /** The holder stops this long before the invocation's deadline, handing over. */
  stopBeforeDeadlineMs: number;
  /** Called when the lock was taken over from a holder that stopped renewing it (for metrics). */
  onLockTakeover?: (lock: string) => void;
}

/** What the holder does: once after taking the lock, then one round per interval. */
export interface LeaderWork {
  start?: (stop: AbortSignal, handle: LockHandle) => Promise<void>;
  round: (stop: AbortSignal, round: number, handle: LockHandle) => Promise<void>;
  /**
   * Optional: how the holder waits for the next round, when something can
   * bring it forward (pod-status's provider changes). Waits `ms` or less,
   * resolving true when woken early, false when the time passed; rejects
   * when `stop` aborts. With it, the holder also waits out the time up to
   * its stop when the next interval would end after it, in case it is
   * woken; without it, it sleeps the interval and stops when that would
   * end after its stop.
   */
  wait?: (ms: number, stop: AbortSignal) => Promise<boolean>;
}

export interface LeaderLoopResult {
  /** standby: another invocation held the lock until this one stopped. */
  role: 'holder' | 'standby';
  epoch?: number;
  rounds: number;
  /** Why the holder stopped: deadline reached (hand-off), lock lost, or the invocation aborted. */
  stopped?: 'deadline' | 'lock-lost' | 'aborted';
}

/**
 * The shape every scheduled function shares, given a once-a-minute schedule
 * and overlapping invocations. Stand by as a hot standby until holding the
 * lock (the previous holder hands over near its deadline; a crashed holder's
 * lock goes stale after one lock TTL), keep the lock renewed every third of
 * its TTL, run a round every interval until shortly before the deadline,
 * and release so that the next invocation, already waiting, takes over within
 * one poll. Losing the lock, or its TTL running out without a renewal,
 * aborts the `stop` signal the work receives.
 */
export async function runAsLeader(options: LeaderLoopOptions, work: LeaderWork): Promise<LeaderLoopResult> {
  const { lock, clock, log, invocation, intervalMs } = options;
  const signal = invocation.signal;
  const locks = new LockManager({
    store: options.lockStore,
    // Unique per invocation, also when a warm sandbox runs several at once.
    owner: `${invocation.requestId}/${randomUUID().slice(0, 8)}`,
    ttlMs: options.lockTtlMs,
    clock,
  });
  const stopAt = invocation.deadline - options.stopBeforeDeadlineMs;
  // Taking the lock is worth it only with at least one interval left to hold it.
  const handle = await locks.acquire(lock, {
    pollMs: options.lockPollMs,
    until: stopAt - intervalMs,
    signal,
  });
  if (!handle) {
    log.info({ lock }, 'lock held elsewhere until this invocation stopped: stood by');
    return { role: 'standby', rounds: 0 };
  }
  if (handle.takenOverFrom !== undefined) {
    log.warn(
      { lock, epoch: handle.epoch, previousOwner: handle.takenOverFrom },
      'lock acquired from a holder that stopped renewing it',
    );
    options.onLockTakeover?.(lock);
  } else {
    log.info({ lock, epoch: handle.epoch }, 'lock acquired');
  }
  const holding = new AbortController();
  const stop = AbortSignal.any([signal, holding.signal]);
  const keeper = keepLock(locks, handle, clock, log, stop, holding);
  let rounds = 0;
  let stopped: LeaderLoopResult['stopped'] = 'deadline';
  try {
    // The work itself is cut off at the stop time too: a round that would run
    // past it must not keep the holder from handing over before the deadline.
    const untilStop = AbortSignal.any([
      stop,
      AbortSignal.timeout(Math.max(0, Math.floor(stopAt - clock.monotonic()))),
    ]);
    await work.start?.(untilStop, handle);
    for (;;) {
      if (untilStop.aborted || !locks.isValid(handle)) break;
      const started = clock.monotonic();
      await work.round(untilStop, rounds + 1, handle);
      rounds++;
      const next = started + intervalMs;
      if (next >= stopAt && !work.wait) break;
      try {
        const until = Math.min(next, stopAt);
        const woken = work.wait
          ? await work.wait(until - clock.monotonic(), untilStop)
          : await clock.sleep(next - clock.monotonic(), untilStop).then(() => false);
        if (!woken && next >= stopAt) break;
      } catch {
        break;
      }
    }
  } finally {
    if (holding.signal.aborted) stopped = 'lock-lost';
    else if (signal.aborted) stopped = 'aborted';
    holding.abort();
    await keeper;
    // A crashed or aborted invocation does not release: its lock goes stale instead.
    if (!signal.aborted)
      await locks.release(handle).catch((err: unknown) => log.warn({ err }, 'release failed'));
  }
  log.info({ lock, epoch: handle.epoch, rounds, stopped }, 'holder stopped');
  return { role: 'holder', epoch: handle.epoch, rounds, stopped };
}

/**
 * Renews the lock every third of its TTL until `stop` aborts. Aborts
 * `holding` when the lock is lost, or when renewals keep failing until the
 * TTL runs out, so that the holder stops acting.
 */
export async function keepLock(
  locks: LockManager,
  handle: LockHandle,
  clock: Clock,
  log: Logger,
  stop: AbortSignal,
  holding: AbortController,
): Promise<void> {
  const interval = Math.max(1, Math.floor((handle.validUntil - clock.monotonic()) / 3));
  while (!stop.aborted) {
    try {
      await clock.sleep(interval, stop);
    } catch {
      return;
    }
    try {
      await locks.renew(handle);
    } catch (err) {
      if (err instanceof LockLostError) {
        log.error({ err, lock: handle.name, epoch: handle.epoch }, 'lock lost: stopping at once');
        holding.abort(err);
        return;
      }
      // A failed renewal is retried; the holder stops acting once the TTL runs out.
      log.warn({ err, lock: handle.name }, 'lock renewal failed');
      if (!locks.isValid(handle)) {
        holding.abort(err);
        return;
      }
    }
  }
}

/** The fulfilled values of `settled`; rejections are logged per item unless the work was stopped. */
export function settledValues<T>(
  settled: PromiseSettledResult<T>[],
  items: readonly string[],
  log: Logger,
  stop: AbortSignal,
  what: string,
): T[] {
  const values: T[] = [];
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') values.push(s.value);
    else if (!stop.aborted) log.warn({ err: s.reason, node: items[i] }, what);
  });
  return values;
}
