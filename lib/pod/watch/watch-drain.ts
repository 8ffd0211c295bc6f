import type { Clock } from '../../clock.ts';
import type { EventPublisher } from '../../events/publisher.ts';
import { isGone } from '../../kube/client.ts';
import type { KubeContext } from '../../kube/kube-context.ts';
import { nodePodsSelector } from '../../kube/node-pods.ts';
import { podKey } from '../../kube/pod-key.ts';
import { watchStream } from '../../kube/watch.ts';
import type { Logger } from '../../log/logger.ts';
import { WatchBatcher } from './watch-batcher.ts';
import { isPodLike, isWatchEventType, podDetail, resourceVersionOf } from './watch-events.ts';
import type { WatchHints } from './watch-hints.ts';

/**
 * Seconds of one drain request. kube-apiserver 1.20 sends a watch its
 * bookmark 2 s before the watch's timeout (its cacher's nextBookmarkTime),
 * and only when pods changed somewhere in the cluster since the watch's
 * resourceVersion: 3 s makes it come after about 1 s.
 */
export const DRAIN_WATCH_SECONDS = 3;

export interface DrainOptions {
  node: string;
  kubeContext: KubeContext;
  publisher: EventPublisher;
  clock: Clock;
  log: Logger;
  /** Where the watch starts: everything up to it is published. */
  fromResourceVersion: string;
  /**
   * The drain ends once no pod event came for this long since the watch
   * opened or since the last event (the API server sends the events after
   * the resourceVersion at once, from its watch cache).
   */
  quietMs: number;
  /** Wait for the server's bookmark instead of ending on silence (to keep the resourceVersion fresh). */
  awaitBookmark: boolean;
  /** How long an event may wait for others to fill a batch of 10. */
  flushMs: number;
  /**
   * The node's hints memory, kept across the drains of a warm sandbox (each
   * drain resumes where the last one's published events end); the drain
   * makes it forget everything when it ends without every event it received
   * published, or with a 410.
   */
  hints: WatchHints;
  /** Ends the drain: publishes what came, nothing more. */
  stop: AbortSignal;
  /** Halts at once: nothing more is published (the invocation ended). */
  halt: AbortSignal;
}

export interface DrainResult {
  /**
   * quiet: silence (or the bookmark) ended it; closed: the server ended it;
   * stopped: `stop`; expired: the resourceVersion is too old (410), relist;
   * failed: the request or the publish failed, the next drain resumes.
   */
  end: 'quiet' | 'closed' | 'stopped' | 'expired' | 'failed';
  /** Everything up to this resourceVersion is published. */
  publishedResourceVersion: string;
  /** Pod events published. */
  published: number;
  /** A bookmark came (the resourceVersion is now the cluster's). */
  bookmarked: boolean;
  error?: unknown;
}

/**
 * One short watch of a node's pods from a resourceVersion, as a tick uses
 * it: publishes every event in order, and ends on silence instead of holding
 * the invocation open. Ending early loses nothing: the resourceVersion moves
 * only past what was received and published, and the next drain asks again
 * from there.
 */
export function drainWatch(o: DrainOptions): Promise<DrainResult> {
  return new Drain(o).run();
}

class Drain {
  readonly #o: DrainOptions;
  readonly #watchAbort = new AbortController();
  readonly #signal: AbortSignal;
  readonly #batcher: WatchBatcher;
  #published = 0;
  #bookmarked = false;
  #quiet = false;
  #status: unknown;
  #publishError: unknown;
  /** The watch's opening, then each pod event (monotonic); undefined before it opened. */
  #lastActivity: number | undefined;

  constructor(o: DrainOptions) {
    this.#o = o;
    this.#signal = AbortSignal.any([o.stop, o.halt, this.#watchAbort.signal]);
    this.#batcher = new WatchBatcher({
      publisher: o.publisher,
      clock: o.clock,
      startResourceVersion: o.fromResourceVersion,
      flushMs: o.flushMs,
      signal: o.halt,
      onPublished: async (_rv, count) => {
        this.#published += count;
      },
      onFailure: (err) => {
        this.#publishError = err;
        this.#watchAbort.abort();
      },
    });
  }

  async run(): Promise<DrainResult> {
    const { clock } = this.#o;
    const silence = watchSilence(
      clock,
      this.#o.quietMs,
      this.#signal,
      () => this.#lastActivity,
      () => {
        if (this.#o.awaitBookmark && !this.#bookmarked) return;
        this.#quiet = true;
        this.#watchAbort.abort();
      },
    );
    let requestError: unknown;
    try {
      await watchStream(
        this.#o.kubeContext,
        '/api/v1/pods',
        {
          fieldSelector: nodePodsSelector(this.#o.node),
          resourceVersion: this.#o.fromResourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: DRAIN_WATCH_SECONDS,
        },
        (type, object) => this.#onEvent(type, object),
        this.#signal,
        { onOpen: () => (this.#lastActivity = clock.monotonic()) },
      );
    } catch (err) {
      requestError = err;
    } finally {
      this.#watchAbort.abort();
      await silence;
    }
    if (this.#o.halt.aborted) this.#batcher.close();
    else await this.#batcher.drain();
    const outcome = this.#outcome(requestError);
    if (this.#o.halt.aborted || outcome.end === 'expired' || outcome.end === 'failed') this.#o.hints.forget();
    return outcome;
  }

  #onEvent(type: string, object: unknown): void {
    const { node, log } = this.#o;
    if (type === 'ERROR') {
      this.#status = object;
      this.#watchAbort.abort();
      return;
    }
    const rv = resourceVersionOf(object);
    if (!rv) return;
    if (type === 'BOOKMARK' || !isWatchEventType(type) || !isPodLike(object)) {
      this.#batcher.push(undefined, rv);
      if (type === 'BOOKMARK') this.#bookmarked = true;
      return;
    }
    this.#lastActivity = this.#o.clock.monotonic();
    const detail = podDetail(type, object, node, rv);
    if ('skip' in detail) {
      log.warn({ type, resourceVersion: rv, reason: detail.skip }, 'watch event not announced');
      this.#batcher.push(undefined, rv);
      return;
    }
    log.debug({ pod: podKey(detail), uid: detail.uid, type, resourceVersion: rv }, 'pod event received');
    this.#o.hints.push(this.#batcher, { type, pod: object, detail, resourceVersion: rv });
  }

  #outcome(requestError: unknown): DrainResult {
    const publishError = this.#publishError ?? this.#batcher.failure;
    const result = {
      publishedResourceVersion: this.#batcher.publishedResourceVersion,
      published: this.#published,
      bookmarked: this.#bookmarked,
    };
    const status = this.#status;
    if (publishError !== undefined) return { ...result, end: 'failed', error: publishError };
    if (isGone(status) || isGone(requestError))
      return { ...result, end: 'expired', error: status ?? requestError };
    if (status !== undefined || requestError !== undefined)
      return { ...result, end: 'failed', error: status ?? requestError };
    if (this.#quiet) return { ...result, end: 'quiet' };
    if (this.#o.stop.aborted || this.#o.halt.aborted) return { ...result, end: 'stopped' };
    return { ...result, end: 'closed' };
  }
}

/**
 * Calls `onQuiet` once `quietMs` passed since the last activity (the
 * watch's opening, then each event); resolves when it did or `signal`
 * aborted. Nothing is timed before the watch opened.
 */
async function watchSilence(
  clock: Clock,
  quietMs: number,
  signal: AbortSignal,
  lastActivity: () => number | undefined,
  onQuiet: () => void,
): Promise<void> {
  for (;;) {
    const since = lastActivity();
    const wait = since === undefined ? Math.min(quietMs, 50) : since + quietMs - clock.monotonic();
    if (since !== undefined && wait <= 0) {
      onQuiet();
      // A wait for the bookmark goes on until the watch ends.
      if (signal.aborted) return;
      await clock.sleep(quietMs, signal).catch(() => {});
      if (signal.aborted) return;
      continue;
    }
    try {
      await clock.sleep(wait, signal);
    } catch {
      return;
    }
  }
}
