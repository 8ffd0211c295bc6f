import { setTimeout as delay } from 'node:timers/promises';

/** Time, injected so that loops, leases and backoffs are testable without real waiting. */
export interface Clock {
  /** Wall-clock time in epoch milliseconds: for timestamps written to other systems. */
  now(): number;
  /** Monotonic milliseconds: for measuring elapsed time on this process only. */
  monotonic(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) => delay(Math.max(0, ms), undefined, signal ? { signal } : {}),
};
