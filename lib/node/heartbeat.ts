import type { Clock } from '../clock.ts';
import { type LockHandle, LockLostError, type LockManager } from '../lock/lock.ts';
import type { Logger } from '../log/logger.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import type { NodeController, TickResult } from './node-controller.ts';

/** The lock that makes one invocation at a time the heartbeat holder for all nodes of a deployment. */
export const HEARTBEAT_LOCK = 'heartbeat';

export interface HeartbeatOptions {
  locks: LockManager;
  controllers: readonly NodeController[];
  clock: Clock;
  log: Logger;
  renewIntervalMs: number;
  lockPollMs: number;
  maxParallel: number;
  /** Monotonic time after which this invocation does nothing more (its deadline minus a margin). */
  stopAt: number;
  /** Aborts when the invocation is killed or times out. */
  signal?: AbortSignal;
  /** Called after each tick round, for metrics and tests. */
  onTick?: (results: TickResult[]) => void;
}

export interface HeartbeatResult {
  /** standby: another invocation held the lock until we stopped. */
  role: 'holder' | 'standby';
  epoch?: number;
  rounds: number;
  /** Why the holder stopped: deadline reached (hand-off), lock lost, or aborted. */
  stopped?: 'deadline' | 'lock-lost' | 'aborted';
}

/**
 * One scheduled heartbeat invocation. It waits as a hot standby until it holds
 * the heartbeat lock (the previous holder hands over near its deadline, or a
 * crashed holder's lock goes stale after one lock lease), then renews every
 * node each renew interval until shortly before its own deadline, and
 * releases the lock so that the next invocation, already waiting, takes over
 * within one poll.
 */
export async function runHeartbeat(options: HeartbeatOptions): Promise<HeartbeatResult> {
  const { locks, clock, log, stopAt, signal } = options;
  // Taking the lock is worth it only with at least one renew interval left to hold it.
  const handle = await locks.acquire(HEARTBEAT_LOCK, {
    pollMs: options.lockPollMs,
    until: stopAt - options.renewIntervalMs,
    ...(signal ? { signal } : {}),
  });
  if (!handle) {
    log.info('heartbeat lock held elsewhere until this invocation stopped: stood by');
    return { role: 'standby', rounds: 0 };
  }
  log.info({ epoch: handle.epoch }, 'heartbeat lock acquired');
  const holding = new AbortController();
  const stop = signal ? AbortSignal.any([signal, holding.signal]) : holding.signal;
  const keeper = keepLock(locks, handle, clock, log, stop, holding);
  let rounds = 0;
  let stopped: HeartbeatResult['stopped'] = 'deadline';
  try {
    await mapSettledLimit(options.controllers, options.maxParallel, async (c) => {
      try {
        await c.start(stop);
      } catch (err) {
        log.error({ err, node: c.name }, 'node start failed; retrying on the next tick');
        throw err;
      }
    });
    for (;;) {
      if (stop.aborted || !locks.isValid(handle)) break;
      const roundStart = clock.monotonic();
      const settled = await mapSettledLimit(options.controllers, options.maxParallel, (c) => c.tick(stop));
      rounds++;
      const results: TickResult[] = [];
      settled.forEach((s, i) => {
        if (s.status === 'fulfilled') results.push(s.value);
        else if (!stop.aborted)
          log.error({ err: s.reason, node: options.controllers[i]?.name }, 'node heartbeat failed');
      });
      options.onTick?.(results);
      const next = roundStart + options.renewIntervalMs;
      if (next >= stopAt) break;
      try {
        await clock.sleep(next - clock.monotonic(), stop);
      } catch {
        break;
      }
    }
  } finally {
    if (holding.signal.aborted) stopped = 'lock-lost';
    else if (signal?.aborted) stopped = 'aborted';
    holding.abort();
    await keeper;
    // A crashed or aborted invocation does not release: its lock goes stale instead.
    if (!signal?.aborted)
      await locks.release(handle).catch((err: unknown) => log.warn({ err }, 'release failed'));
  }
  log.info({ epoch: handle.epoch, rounds, stopped }, 'heartbeat holder stopped');
  return { role: 'holder', epoch: handle.epoch, rounds, stopped };
}

/** Renews the lock every third of its lease until stopped; aborts `holding` when the lock is lost. */
async function keepLock(
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
        log.error({ err, epoch: handle.epoch }, 'heartbeat lock lost: stopping at once');
        holding.abort(err);
        return;
      }
      // A failed renewal is retried; the holder stops acting once the lease runs out (isValid).
      log.warn({ err }, 'heartbeat lock renewal failed');
      if (!locks.isValid(handle)) {
        holding.abort(err);
        return;
      }
    }
  }
}
