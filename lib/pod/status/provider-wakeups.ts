import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { PodProvider } from '../../provider/provider.ts';

/** After the first change, further changes are gathered this long, so a burst wakes one round. */
export const WAKE_SETTLE_MS = 100;
/**
 * Woken rounds start at least this far apart: while pods churn, changes come
 * all the time (a round's own starts and removals among them), and a round
 * per change would read every node's known pods many times a second.
 */
export const MIN_WAKE_INTERVAL_MS = 1_000;
/** A stream that failed is opened again after this long, doubling up to {@link MAX_REOPEN_MS}. */
export const REOPEN_MS = 1_000;
export const MAX_REOPEN_MS = 30_000;

export interface ProviderWakeupOptions {
  provider: Pick<PodProvider, 'watchChanges'>;
  nodes: readonly string[];
  clock: Clock;
  log: Logger;
  settleMs?: number;
  minWakeIntervalMs?: number;
  reopenMs?: number;
  maxReopenMs?: number;
}

/**
 * What shortens pod-status's wait between rounds: each node's stream of
 * provider changes ({@link PodProvider.watchChanges}), held open while the
 * holder runs. A change wakes the wait at once; every change seen from then
 * until the woken round begins (a burst: an exit, its cleanup, a removal)
 * is one wake-up, and a change during a round wakes the next wait at once,
 * woken rounds starting at most once a second.
 * The stream only shortens waits: the round reads every status itself,
 * so a lost change costs one interval, no more. A stream that fails is
 * logged once (a warning; its repeats at debug level) and opened again with
 * a back-off, polling meanwhile.
 */
export class ProviderWakeups {
  readonly #options: ProviderWakeupOptions;
  /** A change came since the last wake-up. */
  #pending = false;
  #wake = new AbortController();
  #warned = false;
  #woken = 0;
  /** When the last wake-up resolved (monotonic). */
  #wokenAt = Number.NEGATIVE_INFINITY;

  constructor(options: ProviderWakeupOptions) {
    this.#options = options;
  }

  /** Whether the provider can push changes at all. */
  get available(): boolean {
    return this.#options.provider.watchChanges !== undefined;
  }

  /** The waits a change cut short. */
  get woken(): number {
    return this.#woken;
  }

  /**
   * Opens every node's stream, kept (and reopened after failures) until
   * `signal` aborts; returns at once. Nothing waits for the streams to end.
   */
  open(signal: AbortSignal): void {
    if (!this.available) return;
    for (const node of this.#options.nodes) void this.#watch(node, signal);
  }

  /**
   * Waits `ms`, or less when a change comes (or came since the last wake-up);
   * then gathers the burst for the settle time, and for as long as the
   * previous wake-up is less than the minimum wake interval ago, and
   * resolves true. Resolves false when the time passed without a change;
   * rejects with the signal's reason when it aborts first, as the clock's
   * sleep does.
   */
  async wait(ms: number, signal: AbortSignal): Promise<boolean> {
    const { clock } = this.#options;
    if (!this.#pending) {
      if (this.#wake.signal.aborted) this.#wake = new AbortController();
      try {
        await clock.sleep(ms, AbortSignal.any([signal, this.#wake.signal]));
      } catch (err) {
        if (signal.aborted || !this.#pending) throw err;
      }
    }
    if (!this.#pending) return false;
    const settleMs = this.#options.settleMs ?? WAKE_SETTLE_MS;
    const spacedMs =
      this.#wokenAt + (this.#options.minWakeIntervalMs ?? MIN_WAKE_INTERVAL_MS) - clock.monotonic();
    await clock.sleep(Math.max(settleMs, spacedMs), signal);
    this.#pending = false;
    this.#woken++;
    this.#wokenAt = clock.monotonic();
    return true;
  }

  #changed(): void {
    this.#pending = true;
    this.#wake.abort();
  }

  async #watch(node: string, signal: AbortSignal): Promise<void> {
    const { provider, clock, log } = this.#options;
    const firstPause = this.#options.reopenMs ?? REOPEN_MS;
    let pause = firstPause;
    while (!signal.aborted) {
      try {
        const changes = provider.watchChanges?.(node, signal);
        if (!changes) return;
        for await (const _change of changes) {
          pause = firstPause;
          this.#changed();
        }
        if (signal.aborted) return;
        throw new Error('the change stream ended');
      } catch (err) {
        if (signal.aborted) return;
        const fields = { err, node, reopenInMs: pause };
        const message = 'provider change stream failed: polling alone until it is open again';
        if (this.#warned) log.debug(fields, message);
        else log.warn(fields, message);
        this.#warned = true;
      }
      try {
        await clock.sleep(pause, signal);
      } catch {
        return;
      }
      pause = Math.min(pause * 2, this.#options.maxReopenMs ?? MAX_REOPEN_MS);
    }
  }
}
