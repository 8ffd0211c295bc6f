import type { Clock } from '../clock.ts';

/** Initial reconcile: exponential backoff from 100 ms, doubling up to 10 s. */
export const BACKOFF_START_MS = 100;
export const BACKOFF_MAX_MS = 10_000;
/** Failed initial attempts are logged once this long has passed, then at most this often. */
const LOG_ERRORS_AFTER_MS = 2_000;
const LOG_ERRORS_EVERY_MS = 10_000;

/**
 * Where the initial reconcile's retries stand: when the next attempt is due
 * (monotonic) and the delay after it, and when a failure is next worth
 * logging. The holder of the lock keeps one for as long as it is elected, so
 * that a leader whose attempts are spread over several invocations (the
 * tick's, each cut off at its work time) goes on with the schedule instead of
 * starting it again at 100 ms in each of them.
 */
export class InitialBackoff {
  readonly #clock: Clock;
  #delayMs = BACKOFF_START_MS;
  /** Monotonic time of the next attempt; undefined before the first, which is due at once. */
  #nextAt: number | undefined;
  #logAt: number | undefined;
  #attempts = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Attempts made so far. */
  get attempts(): number {
    return this.#attempts;
  }

  /** How long until the next attempt is due; 0 when it is. */
  waitMs(): number {
    return this.#nextAt === undefined ? 0 : Math.max(0, this.#nextAt - this.#clock.monotonic());
  }

  /** An attempt starts now. */
  attempted(): void {
    this.#attempts++;
    this.#logAt ??= this.#clock.monotonic() + LOG_ERRORS_AFTER_MS;
  }

  /**
   * The attempt failed: the next one is due after the current delay, which
   * doubles up to its maximum. Whether to log this failure: not in the first
   * 2 s (an API server that is just starting fails for a while), then at most
   * every 10 s.
   */
  failed(): boolean {
    const now = this.#clock.monotonic();
    this.#nextAt = now + this.#delayMs;
    this.#delayMs = Math.min(this.#delayMs * 2, BACKOFF_MAX_MS);
    if (this.#logAt === undefined || now < this.#logAt) return false;
    this.#logAt = now + LOG_ERRORS_EVERY_MS;
    return true;
  }
}

/**
 * Attempts `attempt` on `backoff`'s schedule until it succeeds, sleeping
 * between attempts; `stop` ends the wait (the sleep rejects with its reason)
 * and leaves `backoff` where it was, for the next call to go on from.
 * `onFailure` hears of each failure, with whether it is worth logging.
 * Errors for which `fatal` is true end the retries at once.
 */
export async function retryWithBackoff(options: {
  backoff: InitialBackoff;
  clock: Clock;
  stop: AbortSignal;
  attempt: () => Promise<void>;
  fatal: (err: unknown) => boolean;
  onFailure: (err: unknown, log: boolean) => void;
}): Promise<void> {
  const { backoff, clock, stop, attempt, fatal, onFailure } = options;
  for (;;) {
    const wait = backoff.waitMs();
    if (wait > 0) await clock.sleep(wait, stop);
    stop.throwIfAborted();
    backoff.attempted();
    try {
      await attempt();
      return;
    } catch (err) {
      if (stop.aborted || fatal(err)) throw err;
      onFailure(err, backoff.failed());
    }
  }
}
