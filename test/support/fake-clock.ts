import type { Clock } from '../../lib/clock.ts';

/** 2026-01-01T00:00:00Z: any fixed instant will do; a fixed one keeps timestamps in failures readable. */
const DEFAULT_WALL = Date.UTC(2026, 0, 1);

export interface FakeClockOptions {
  /** Wall-clock time at the start, epoch ms. Default 2026-01-01T00:00:00Z. */
  wall?: number;
  /** Monotonic time at the start, ms. Default 0. */
  monotonic?: number;
  /**
   * When true, each `sleep(ms)` moves time forward by `ms` itself and
   * resolves at once: for code under test that waits on nothing but the
   * clock (a poll loop, a retry backoff), so the test need not advance it.
   * Default false: a sleeper waits until {@link FakeClock.advance} reaches its time.
   */
  autoAdvance?: boolean;
}

interface Sleeper {
  /** Monotonic time at which it wakes. */
  at: number;
  wake(): void;
}

/**
 * A {@link Clock} for tests that moves only when told: wall time and
 * monotonic time advance together, or the wall clock alone jumps
 * ({@link setWall}), as NTP steps a real one. `sleep` resolves when the time
 * is reached and rejects with the signal's reason when it aborts first, as
 * the system clock's does.
 */
export class FakeClock implements Clock {
  #wall: number;
  #monotonic: number;
  readonly #autoAdvance: boolean;
  readonly #sleepers = new Set<Sleeper>();
  /** Every duration asked of `sleep`, in order: to check a backoff schedule without waiting for it. */
  readonly sleeps: number[] = [];

  constructor(options: FakeClockOptions = {}) {
    this.#wall = options.wall ?? DEFAULT_WALL;
    this.#monotonic = options.monotonic ?? 0;
    this.#autoAdvance = options.autoAdvance ?? false;
  }

  now(): number {
    return this.#wall;
  }

  monotonic(): number {
    return this.#monotonic;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.sleeps.push(ms);
    if (ms <= 0) return Promise.resolve();
    if (this.#autoAdvance) {
      this.#move(ms);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#sleepers.delete(sleeper);
        reject(signal?.reason);
      };
      const sleeper: Sleeper = {
        at: this.#monotonic + ms,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.#sleepers.add(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Moves wall and monotonic time forward by `ms` at once and wakes the
   * sleepers whose time has come, earliest first. The promise resolves after
   * one turn of the event loop, so that what they woke has run when the test
   * looks.
   */
  advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ${ms} is not a duration`);
    this.#move(ms);
    return new Promise((resolve) => setImmediate(resolve));
  }

  /** Sets the wall clock alone (epoch ms), forwards or backwards; monotonic time and sleepers are untouched. */
  setWall(epochMs: number): void {
    this.#wall = epochMs;
  }

  /** How many sleeps are waiting for the clock. */
  sleepers(): number {
    return this.#sleepers.size;
  }

  #move(ms: number): void {
    this.#wall += ms;
    this.#monotonic += ms;
    const due = [...this.#sleepers].filter((s) => s.at <= this.#monotonic).sort((a, b) => a.at - b.at);
    for (const sleeper of due) {
      this.#sleepers.delete(sleeper);
      sleeper.wake();
    }
  }
}
