import type { Clock } from '../../clock.ts';
import type { PodEventDetail } from '../../events/pod-event.ts';
import { type EventPublisher, MAX_ENTRIES_PER_PUT } from '../../events/publisher.ts';

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
  /** Monotonic ms before which the event is not published, unless the DELETED of its uid supersedes it. */
  holdUntil?: number;
}

/** Event types saying the uid is gone for good: pod-sync's reconcile of one covers a held event of the uid. */
const FINAL_TYPES: readonly PodEventDetail['type'][] = ['DELETED', 'GONE'];

/** How an event is queued beyond its detail. */
export interface PushOptions {
  /** The event's `resources` (pod-watch's hints). */
  resources?: readonly string[];
  /**
   * Hold the event back this long, for the DELETED event of its uid to
   * supersede it (see {@link WatchBatcher}); the events behind it wait too.
   */
  holdMs?: number;
}

/**
 * Publishes the events of one watch request in the order received, in
 * batches (at once when 10 are waiting, otherwise after `flushMs`), one
 * publish at a time, and tracks the resourceVersion up to which every
 * received event has been published: the only value the watcher may save as
 * its bookmark.
 *
 * An event pushed with `holdMs` waits that long for the DELETED (or GONE)
 * event of its uid, which then supersedes it: it is not published (its
 * resourceVersion still counts as passed), as virtual-kubelet's workqueue
 * holds a key once however often it is added before a worker takes it.
 * pod-sync's reconcile of a gone uid deletes what is left of it (its record,
 * its provider pod), all the held event could still lead to. pod-watch
 * holds a terminating pod's `not-running` event, since whoever wrote that
 * status usually deletes the pod right after. The events received after a
 * held one wait with it, so that the order and the bookmark stay as they
 * are; {@link drain} publishes held events at once.
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
  /** drain() was called: nothing is held any more. */
  #draining = false;

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
   * announces nothing), with the `resources` to send with it and how long to
   * hold it (see the class comment).
   */
  push(detail: PodEventDetail | undefined, resourceVersion: string, options: PushOptions = {}): void {
    if (this.#closed || this.#failure !== undefined) return;
    const { resources, holdMs } = options;
    if (detail && FINAL_TYPES.includes(detail.type) && this.#supersede(detail.uid)) this.#disarm();
    this.#items.push({
      ...(detail ? { detail } : {}),
      ...(detail && resources && resources.length > 0 ? { resources } : {}),
      resourceVersion,
      ...(detail && holdMs !== undefined && holdMs > 0
        ? { holdUntil: this.#options.clock.monotonic() + holdMs }
        : {}),
    });
    if (detail) this.#pendingDetails++;
    if (this.#pendingDetails > this.#maxPending) {
      this.#fail(new WatchBacklogError(`${this.#pendingDetails} pod events waiting to be published`));
      return;
    }
    if (this.#pendingDetails >= MAX_ENTRIES_PER_PUT && this.#heldFor() === 0) this.#kick();
    else this.#arm();
  }

  /** Drops the details of `uid`'s held events (keeping their resourceVersions); whether any was waiting. */
  #supersede(uid: string): boolean {
    let dropped = 0;
    for (const item of this.#items) {
      if (item.holdUntil === undefined || item.detail?.uid !== uid) continue;
      delete item.detail;
      delete item.resources;
      delete item.holdUntil;
      dropped++;
    }
    this.#pendingDetails -= dropped;
    return dropped > 0;
  }

  /** Publishes everything received so far; resolves when done or failed (see {@link failure}). */
  async drain(): Promise<void> {
    this.#draining = true;
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
    const held = this.#heldFor();
    const timer = new AbortController();
    this.#timer = timer;
    this.#options.clock.sleep(Math.max(this.#options.flushMs, held), timer.signal).then(
      () => {
        if (this.#timer === timer) this.#timer = undefined;
        this.#kick();
      },
      () => {},
    );
  }

  /** How much longer the first waiting event is held (0: not held). */
  #heldFor(): number {
    if (this.#draining) return 0;
    const first = this.#items.find((item) => item.detail);
    return first?.holdUntil === undefined
      ? 0
      : Math.max(0, first.holdUntil - this.#options.clock.monotonic());
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
      // Nothing to take before a held event: the timer armed after this loop publishes it.
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

  /**
   * The oldest items holding at most `maxPublish` details, and the bookmarks
   * right behind them, up to the first event still held.
   */
  #take(): Item[] {
    const now = this.#draining ? Number.POSITIVE_INFINITY : this.#options.clock.monotonic();
    let count = 0;
    let end = 0;
    while (end < this.#items.length) {
      const item = this.#items[end];
      if (item?.detail) {
        if (count === this.#maxPublish || (item.holdUntil !== undefined && item.holdUntil > now)) break;
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
