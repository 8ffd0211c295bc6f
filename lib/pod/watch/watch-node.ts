import type { Clock } from '../../clock.ts';
import { type EventPublisher, PublishError } from '../../events/publisher.ts';
import type { CoreApi, KubeContext } from '../../kube/client.ts';
import { keepLock } from '../../lock/leader-loop.ts';
import { type LockHandle, LockLostError, type LockManager } from '../../lock/lock.ts';
import type { Logger } from '../../log/logger.ts';
import type { KnownPodStore } from '../known/known-pods.ts';
import type { WatchBookmarkStore } from './watch-bookmark.ts';
import { drainWatch } from './watch-drain.ts';
import { describeStatus } from './watch-events.ts';
import { WatchHints } from './watch-hints.ts';
import { relistNode } from './watch-relist.ts';
import { type ClusterProbe, type RelistReason, watchStart } from './watch-resume.ts';

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
    const start = await watchStart(bookmark, this.#o.cluster, this.#log);
    this.#clusterUid = start.clusterUid;
    const rv = start.from;
    this.#saved = start.saved;
    this.#latest = rv;
    if (rv) this.#log.info({ resourceVersion: rv }, 'resuming the pod watch from the bookmark');
    return { rv, relistReason: start.relist ?? 'expired' };
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

  /** One watch request from `fromRv` (a drain without a quiet end), until the server closes it, it fails, or the watcher stops. */
  async #watch(fromRv: string): Promise<{ outcome: WatchEnd; publishedRv: string }> {
    const { clock } = this.#o;
    const left = Math.floor((this.#o.stopAt - clock.monotonic()) / 1_000);
    this.#result.watches++;
    const drained = await drainWatch({
      node: this.#o.node,
      kubeContext: this.#o.kubeContext,
      publisher: this.#o.publisher,
      clock,
      log: this.#log,
      fromResourceVersion: fromRv,
      timeoutSeconds: Math.max(1, Math.min(this.#o.settings.watchTimeoutSeconds, left)),
      flushMs: this.#o.settings.flushMs,
      hints: this.#hints,
      stop: this.#stop,
      halt: this.#halt,
      onPublished: (rv) => this.#published(rv, false),
    });
    this.#result.published += drained.published;
    const publishedRv = drained.publishedResourceVersion;
    if (drained.error instanceof LockLostError) this.#holding.abort(drained.error);
    if (this.#halt.aborted) return { outcome: { end: 'stopped' }, publishedRv };
    const { end, error } = drained;
    if (end === 'failed') {
      return {
        outcome: { end: drained.failedAt === 'publish' ? 'publish-failed' : 'failed', error },
        publishedRv,
      };
    }
    if (end === 'expired') return { outcome: { end, error }, publishedRv };
    return { outcome: { end: end === 'closed' ? 'closed' : 'stopped' }, publishedRv };
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
