import type { Clock } from '../clock.ts';
import type { PodEventDetail } from '../events/pod-event.ts';
import { type EventPublisher, MAX_ENTRIES_PER_PUT } from '../events/publisher.ts';

/** More events received than published: the watch is dropped and resumed later from the API server. */
export class WatchBacklogError extends Error {
  override readonly name = 'WatchBacklogError';
}

export interface WatchBatcherOptions {
  publisher: EventPublisher;
  clock: Clock;
  /** The resourceVersion everything before which is already published (where the watch started). */
  startResourceVersion: string;
  /** How long an event may wait for a batch of 10 to fill. */
  flushMs: number;
  /** Details per publish call (the publisher splits them into PutEvents of 10). Default 100. */
  maxPublish?: number;
  /** Received but unpublished events beyond which the batcher fails with WatchBacklogError. Default 5000. */
  maxPending?: number;
  /** Stops publishing at once (crash, lock lost). */
  signal: AbortSignal;
  /**
   * Called, and awaited, after each publish with the resourceVersion up to
   * which everything is now published (e.g. to save the bookmark). A
   * rejection fails the batcher like a failed publish.
   */
  onPublished: (resourceVersion: string, count: number) => Promise<void>;
  /** Called once when publishing fails; nothing more is published afterwards. */
  onFailure: (err: unknown) => void;
}

interface Item {
  /** Absent for a bookmark: it only moves the resourceVersion. */
  detail?: PodEventDetail;
  /** The event's `resources` (pod-watch's hints). */
  resources?: readonly string[];
  resourceVersion: string;
}

/**
 * Publishes the events of one watch request in the order received, in
 * batches (at once when 10 are waiting, otherwise after `flushMs`), one
 * publish at a time, and tracks the resourceVersion up to which every
 * received event has been published: the only value the watcher may save as
 * its bookmark.
 */
export class WatchBatcher {
  readonly #options: WatchBatcherOptions;
  readonly #maxPublish: number;
  readonly #maxPending: number;
  #items: Item[] = [];
  #pendingDetails = 0;
  #publishedRv: string;
  #running: Promise<void> | undefined;
  #timer: AbortController | undefined;
  #failure: unknown;
  #closed = false;

  constructor(options: WatchBatcherOptions) {
    this.#options = options;
    this.#maxPublish = options.maxPublish ?? 100;
    this.#maxPending = options.maxPending ?? 5_000;
    this.#publishedRv = options.startResourceVersion;
  }

  /** Every event received before this resourceVersion (inclusive) is published. */
  get publishedResourceVersion(): string {
    return this.#publishedRv;
  }

  get failure(): unknown {
    return this.#failure;
  }

  /**
   * Queues an event (or, without detail, a bookmark or an event that
   * announces nothing), with the `resources` to send with it.
   */
  push(detail: PodEventDetail | undefined, resourceVersion: string, resources?: readonly string[]): void {
    if (this.#closed || this.#failure !== undefined) return;
    this.#items.push({
      ...(detail ? { detail } : {}),
      ...(detail && resources && resources.length > 0 ? { resources } : {}),
      resourceVersion,
    });
    if (detail) this.#pendingDetails++;
    if (this.#pendingDetails > this.#maxPending) {
      this.#fail(new WatchBacklogError(`${this.#pendingDetails} pod events waiting to be published`));
      return;
    }
    if (this.#pendingDetails >= MAX_ENTRIES_PER_PUT) this.#kick();
    else this.#arm();
  }

  /** Publishes everything received so far; resolves when done or failed (see {@link failure}). */
  async drain(): Promise<void> {
    this.#disarm();
    this.#kick();
    while (this.#running) await this.#running;
  }

  /** Drops what is not published yet and publishes nothing more. */
  close(): void {
    this.#closed = true;
    this.#disarm();
    this.#items = [];
    this.#pendingDetails = 0;
  }

  #arm(): void {
    if (this.#timer || this.#running) return;
    const timer = new AbortController();
    this.#timer = timer;
    this.#options.clock.sleep(this.#options.flushMs, timer.signal).then(
      () => {
        if (this.#timer === timer) this.#timer = undefined;
        this.#kick();
      },
      () => {},
    );
  }

  #disarm(): void {
    this.#timer?.abort();
    this.#timer = undefined;
  }

  #kick(): void {
    if (this.#running) return;
    this.#disarm();
    this.#running = this.#loop().finally(() => {
      this.#running = undefined;
      // Events that arrived during the last publish, fewer than a batch: wait for more.
      if (this.#items.length > 0 && !this.#closed && this.#failure === undefined) this.#arm();
    });
  }

  async #loop(): Promise<void> {
    // Whatever arrived while a publish was in flight has waited long enough: publish it next.
    while (this.#items.length > 0 && !this.#closed && this.#failure === undefined) {
      if (this.#options.signal.aborted) {
        this.close();
        return;
      }
      const taken = this.#take();
      const events = taken.filter((item) => item.detail);
      const details = events.flatMap((item) => (item.detail ? [item.detail] : []));
      const last = taken[taken.length - 1];
      if (!last) return;
      try {
        if (details.length > 0)
          await this.#options.publisher.publish(details, {
            signal: this.#options.signal,
            resources: events.map((item) => item.resources),
          });
        if (this.#closed) return;
        this.#publishedRv = last.resourceVersion;
        await this.#options.onPublished(last.resourceVersion, details.length);
      } catch (err) {
        this.#fail(err);
      }
    }
  }

  /** The oldest items holding at most `maxPublish` details, and the bookmarks right behind them. */
  #take(): Item[] {
    let count = 0;
    let end = 0;
    while (end < this.#items.length) {
      const item = this.#items[end];
      if (item?.detail) {
        if (count === this.#maxPublish) break;
        count++;
      }
      end++;
    }
    this.#pendingDetails -= count;
    return this.#items.splice(0, end);
  }

  #fail(err: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = err ?? new Error('publish failed');
    this.#items = [];
    this.#pendingDetails = 0;
    this.#disarm();
    this.#options.onFailure(this.#failure);
  }
}
