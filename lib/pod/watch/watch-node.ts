import type { Clock } from '../../clock.ts';
import { type EventPublisher, PublishError } from '../../events/publisher.ts';
import { type CoreApi, isGone, type KubeContext } from '../../kube/client.ts';
import { nodePodsSelector } from '../../kube/node-pods.ts';
import { podKey } from '../../kube/pod-key.ts';
import { watchStream } from '../../kube/watch.ts';
import { keepLock } from '../../lock/leader-loop.ts';
import { type LockHandle, LockLostError, type LockManager } from '../../lock/lock.ts';
import type { Logger } from '../../log/logger.ts';
import type { KnownPodStore } from '../known/known-pods.ts';
import { WatchBatcher } from './watch-batcher.ts';
import type { WatchBookmarkStore } from './watch-bookmark.ts';
import { describeStatus, isPodLike, isWatchEventType, podDetail, resourceVersionOf } from './watch-events.ts';
import { WatchHints } from './watch-hints.ts';
import { relistNode } from './watch-relist.ts';
import { type ClusterProbe, type RelistReason, resumePoint } from './watch-resume.ts';

/** Settings of one node's watch loop. */
export interface NodeWatchSettings {
  /** Longest single watch request (bounded by the time left). */
  watchTimeoutSeconds: number;
  flushMs: number;
  /** Minimum time between two bookmark writes (the last one is always written). */
  bookmarkIntervalMs: number;
  /** Pods per LIST page. Default 500. */
  listPageSize?: number;
  /** First wait after a failed watch, list or publish, doubling up to `maxRetryDelayMs`, jittered to 50-100 %. Default 250. */
  retryDelayMs?: number;
  /** Default 5000. */
  maxRetryDelayMs?: number;
}

export interface NodeWatchOptions {
  node: string;
  /** The node's watch lock, already acquired; released at the end unless the invocation was aborted. */
  handle: LockHandle;
  locks: LockManager;
  kubeContext: KubeContext;
  core: CoreApi;
  knownPods: KnownPodStore;
  bookmarks: WatchBookmarkStore;
  /** The cluster's identity and current resourceVersion, to judge the bookmark (see watch-resume.ts). */
  cluster: ClusterProbe;
  publisher: EventPublisher;
  clock: Clock;
  log: Logger;
  settings: NodeWatchSettings;
  /** Monotonic time at which the watcher publishes what it has, saves its bookmark and hands over. */
  stopAt: number;
  /** Aborts when the invocation is killed or times out: nothing more is written. */
  signal: AbortSignal;
  /** Jitter of the retry waits, so that the watchers of many nodes do not retry in step. Default Math.random. */
  random?: () => number;
}

export interface NodeWatchResult {
  node: string;
  epoch: number;
  /** deadline: handed over; lock-lost: another watcher took over; aborted: the invocation was killed. */
  stopped: 'deadline' | 'lock-lost' | 'aborted';
  relists: RelistReason[];
  /** Watch requests made. */
  watches: number;
  /** Pod events published (relists included). */
  published: number;
  /** Publishes that failed after the publisher's retries (the watch then resumed from the last bookmark). */
  publishFailures: number;
  /** The bookmark this watcher last saved. */
  bookmark?: string;
}

const PODS_PATH = '/api/v1/pods';

type WatchEnd =
  | { end: 'closed' }
  | { end: 'expired'; error: unknown }
  | { end: 'failed'; error: unknown }
  | { end: 'publish-failed'; error: unknown }
  | { end: 'stopped' };

/**
 * The watcher of one node while it holds the node's lock: resumes from the
 * bookmark, or lists the node's pods (and announces the remembered pods the
 * list lacks as GONE) when there is none or it expired; then watches from it
 * with bookmarks, publishes every event, and saves as bookmark only a
 * resourceVersion up to which everything has been published. At `stopAt` it
 * publishes what it received, saves the bookmark and releases the lock; the
 * next holder resumes from there.
 */
export async function watchNode(options: NodeWatchOptions): Promise<NodeWatchResult> {
  return new NodeWatcher(options).run();
}

class NodeWatcher {
  readonly #o: NodeWatchOptions;
  readonly #log: Logger;
  /** Lock lost (or the invocation aborted): stop at once, write nothing more. */
  readonly #holding = new AbortController();
  readonly #halt: AbortSignal;
  /** Halted, or the deadline reached: end the watch, then publish, save and release. */
  readonly #stop: AbortSignal;
  readonly #deadline = new AbortController();
  readonly #result: NodeWatchResult;
  /** The bookmark as stored, with this cluster's identity. */
  #saved: string | undefined;
  #clusterUid: string | undefined;
  /** The newest resourceVersion up to which everything is published, saved or not. */
  #latest: string | undefined;
  #lastSaveAt = Number.NEGATIVE_INFINITY;
  /** Saves run one after the other, so the stored bookmark never moves back. */
  #saveChain: Promise<void> = Promise.resolve();
  #saveTimer: AbortController | undefined;
  readonly #hints = new WatchHints(); // what the published events said of each pod

  constructor(options: NodeWatchOptions) {
    this.#o = options;
    this.#log = options.log.child({ node: options.node, epoch: options.handle.epoch });
    this.#halt = AbortSignal.any([options.signal, this.#holding.signal]);
    this.#stop = AbortSignal.any([this.#halt, this.#deadline.signal]);
    this.#result = {
      node: options.node,
      epoch: options.handle.epoch,
      stopped: 'deadline',
      relists: [],
      watches: 0,
      published: 0,
      publishFailures: 0,
    };
  }

  async run(): Promise<NodeWatchResult> {
    const { clock, handle, locks } = this.#o;
    clock.sleep(this.#o.stopAt - clock.monotonic(), this.#stop).then(
      () => this.#deadline.abort(),
      () => {},
    );
    const keeper = keepLock(locks, handle, clock, this.#log, this.#stop, this.#holding);
    let rv: string | undefined;
    try {
      rv = await this.#loop();
    } catch (err) {
      if (!this.#halt.aborted) this.#log.error({ err }, 'pod watch failed');
    } finally {
      this.#deadline.abort();
      this.#saveTimer?.abort();
      await keeper;
      if (this.#holding.signal.aborted) this.#result.stopped = 'lock-lost';
      else if (this.#o.signal.aborted) this.#result.stopped = 'aborted';
      // A crashed or deposed watcher writes nothing: its successor resumes from the last saved bookmark.
      if (!this.#halt.aborted) {
        if (rv !== undefined) {
          await this.#published(rv, true).catch((err: unknown) =>
            this.#log.warn({ err }, 'final bookmark not saved'),
          );
        }
        await locks.release(handle).catch((err: unknown) => this.#log.warn({ err }, 'release failed'));
      }
    }
    this.#log.info(
      { ...this.#result, relists: this.#result.relists.join(',') || 'none' },
      'pod watcher stopped',
    );
    return this.#result;
  }

  /** Returns the resourceVersion everything up to which is published. */
  async #loop(): Promise<string | undefined> {
    const { clock } = this.#o;
    const retryDelayMs = this.#o.settings.retryDelayMs ?? 250;
    const maxRetryDelayMs = this.#o.settings.maxRetryDelayMs ?? 5_000;
    let delay = retryDelayMs;
    const random = this.#o.random ?? Math.random;
    const backOff = async () => {
      await clock.sleep(delay * (0.5 + random() / 2), this.#stop).catch(() => {});
      delay = Math.min(delay * 2, maxRetryDelayMs);
    };

    let { rv, relistReason } = await this.#resume();
    while (!this.#stop.aborted) {
      if (rv === undefined) {
        try {
          rv = await this.#relist(relistReason);
        } catch (err) {
          if (this.#halt.aborted) break;
          this.#countFailure(err);
          this.#log.warn({ err, reason: relistReason }, 'pod list failed; retrying');
          await backOff();
          continue;
        }
      }
      const started = clock.monotonic();
      const { outcome, publishedRv } = await this.#watch(rv);
      rv = publishedRv;
      if (outcome.end === 'stopped') break;
      if (outcome.end === 'expired') {
        this.#log.info(
          { resourceVersion: rv, status: describeStatus(outcome.error) },
          'watch resourceVersion expired (410): relisting',
        );
        rv = undefined;
        relistReason = 'expired';
        delay = retryDelayMs;
        continue;
      }
      if (outcome.end === 'closed' && clock.monotonic() - started >= 1_000) {
        delay = retryDelayMs;
        continue;
      }
      if (outcome.end === 'failed' || outcome.end === 'publish-failed') {
        if (outcome.end === 'publish-failed') this.#countFailure(outcome.error);
        this.#log.warn({ err: outcome.error, resourceVersion: rv }, `pod watch ${outcome.end}; resuming`);
      }
      // A watch that failed or closed at once: do not hammer the API server.
      await backOff();
    }
    return rv;
  }

  /** The bookmark to resume from, or why to relist (watch-resume.ts). */
  async #resume(): Promise<{ rv: string | undefined; relistReason: RelistReason }> {
    const bookmark = await this.#o.bookmarks.get(this.#o.node);
    const start = await resumePoint(bookmark, this.#o.cluster);
    this.#clusterUid = await this.#o.cluster.uid();
    const rv = 'from' in start ? start.from : undefined;
    // A bookmark without the cluster's identity is saved again with it.
    this.#saved = bookmark?.clusterUid === undefined ? undefined : rv;
    this.#latest = rv;
    const relistReason: RelistReason = 'relist' in start ? start.relist : 'expired';
    if (rv) this.#log.info({ resourceVersion: rv }, 'resuming the pod watch from the bookmark');
    else if (relistReason !== 'no-bookmark')
      this.#log.warn(
        { resourceVersion: bookmark?.resourceVersion, reason: relistReason },
        relistReason === 'ahead'
          ? 'bookmark ahead of the cluster (etcd restored from a backup?): relisting'
          : 'bookmark of another cluster: relisting and forgetting its known pods',
      );
    return { rv, relistReason };
  }

  /** Lists the node's pods, publishes the relist events and saves the list's resourceVersion. */
  async #relist(reason: RelistReason): Promise<string> {
    const { node, core, knownPods, publisher } = this.#o;
    const pageSize = this.#o.settings.listPageSize ?? 500;
    const relist = { node, reason, core, knownPods, publisher, log: this.#log, pageSize, signal: this.#halt };
    const { resourceVersion, published } = await relistNode(relist);
    this.#result.relists.push(reason);
    this.#result.published += published;
    await this.#published(resourceVersion, true);
    return resourceVersion;
  }

  /** One watch event (not an ERROR) into the batch: a pod event, or only the resourceVersion it carries. */
  #received(batcher: WatchBatcher, type: string, object: unknown): void {
    const rv = resourceVersionOf(object);
    if (!rv) return;
    if (type === 'BOOKMARK' || !isWatchEventType(type) || !isPodLike(object)) {
      batcher.push(undefined, rv);
      return;
    }
    const detail = podDetail(type, object, this.#o.node, rv);
    if ('skip' in detail) {
      this.#log.warn({ type, resourceVersion: rv, reason: detail.skip }, 'watch event not announced');
      batcher.push(undefined, rv);
      return;
    }
    this.#log.debug(
      { pod: podKey(detail), uid: detail.uid, type, resourceVersion: rv },
      'pod event received',
    );
    this.#hints.push(batcher, { type, pod: object, detail, resourceVersion: rv });
  }

  /** One watch request from `fromRv`, until the server closes it, it fails, or the watcher stops. */
  async #watch(fromRv: string): Promise<{ outcome: WatchEnd; publishedRv: string }> {
    const { node, clock } = this.#o;
    const watchAbort = new AbortController();
    const signal = AbortSignal.any([this.#stop, watchAbort.signal]);
    let status: unknown;
    let publishError: unknown;
    const batcher = new WatchBatcher({
      publisher: this.#o.publisher,
      clock,
      startResourceVersion: fromRv,
      flushMs: this.#o.settings.flushMs,
      signal: this.#halt,
      onPublished: async (rv, count) => {
        this.#result.published += count;
        await this.#published(rv, false);
      },
      onFailure: (err) => {
        publishError = err;
        watchAbort.abort();
      },
    });
    const left = Math.floor((this.#o.stopAt - clock.monotonic()) / 1_000);
    const timeoutSeconds = Math.max(1, Math.min(this.#o.settings.watchTimeoutSeconds, left));
    this.#result.watches++;
    let requestError: unknown;
    try {
      await watchStream(
        this.#o.kubeContext,
        PODS_PATH,
        {
          fieldSelector: nodePodsSelector(node),
          resourceVersion: fromRv,
          allowWatchBookmarks: true,
          timeoutSeconds,
        },
        (type, object) => {
          if (type !== 'ERROR') return this.#received(batcher, type, object);
          status = object;
          watchAbort.abort();
        },
        signal,
      );
    } catch (err) {
      requestError = err;
    }
    // Events received before the stream ended are valid whatever ended it: publish them, unless halted.
    if (this.#halt.aborted) batcher.close();
    else await batcher.drain();
    const publishedRv = batcher.publishedResourceVersion;
    publishError ??= batcher.failure;
    let outcome: WatchEnd;
    if (this.#halt.aborted) outcome = { end: 'stopped' };
    else if (publishError !== undefined) {
      if (publishError instanceof LockLostError) this.#holding.abort(publishError);
      outcome = this.#halt.aborted ? { end: 'stopped' } : { end: 'publish-failed', error: publishError };
    } else if (isGone(status) || isGone(requestError))
      outcome = { end: 'expired', error: status ?? requestError };
    else if (status !== undefined) outcome = { end: 'failed', error: status };
    else if (requestError !== undefined) outcome = { end: 'failed', error: requestError };
    else if (this.#stop.aborted) outcome = { end: 'stopped' };
    else outcome = { end: 'closed' };
    if (outcome.end !== 'closed' && outcome.end !== 'failed') this.#hints.forget();
    return { outcome, publishedRv };
  }

  /**
   * Records that everything up to `rv` is published, and saves it as the
   * bookmark (fenced by the node's lock): now when `force` or the bookmark
   * interval has passed since the last save, otherwise once it has, so that
   * a quiet node's bookmark still catches up.
   * @throws LockLostError when deposed.
   */
  #published(rv: string, force: boolean): Promise<void> {
    this.#latest = rv;
    const wait = this.#lastSaveAt + this.#o.settings.bookmarkIntervalMs - this.#o.clock.monotonic();
    if (force || wait <= 0) return this.#saveLatest();
    if (!this.#saveTimer) {
      const timer = new AbortController();
      this.#saveTimer = timer;
      this.#o.clock.sleep(wait, AbortSignal.any([this.#stop, timer.signal])).then(
        () => {
          this.#saveTimer = undefined;
          this.#saveLatest().catch(() => {});
        },
        () => {
          if (this.#saveTimer === timer) this.#saveTimer = undefined;
        },
      );
    }
    return Promise.resolve();
  }

  #saveLatest(): Promise<void> {
    const run = this.#saveChain.then(() => this.#save());
    this.#saveChain = run.catch(() => {});
    return run;
  }

  async #save(): Promise<void> {
    const rv = this.#latest;
    if (rv === undefined || rv === this.#saved || this.#halt.aborted) return;
    try {
      await this.#o.bookmarks.save(this.#o.node, rv, this.#o.handle, this.#clusterUid);
    } catch (err) {
      if (err instanceof LockLostError) {
        this.#log.error({ err }, 'pod watch lock lost: stopping at once');
        this.#holding.abort(err);
        throw err;
      }
      // Not fatal: the next save carries a newer resourceVersion; a crash before it only re-delivers.
      this.#log.warn({ err, resourceVersion: rv }, 'bookmark not saved');
      return;
    }
    this.#saved = rv;
    this.#lastSaveAt = this.#o.clock.monotonic();
    this.#result.bookmark = rv;
  }

  #countFailure(err: unknown): void {
    if (err instanceof PublishError) this.#result.publishFailures++;
  }
}
