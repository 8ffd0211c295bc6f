import { randomUUID } from 'node:crypto';
import type { Dependencies } from '../../app/dependencies.ts';
import type { Clock } from '../../clock.ts';
import type { EventPublisher } from '../../events/publisher.ts';
import type { Invocation } from '../../invocation.ts';
import { type LockHandle, LockManager } from '../../lock/lock.ts';
import { podWatchLockName } from '../../lock/lock-names.ts';
import type { Logger } from '../../log/logger.ts';
import { KnownPodStore } from '../known/known-pods.ts';
import { WatchBookmarkStore } from './watch-bookmark.ts';
import { type NodeWatchResult, watchNode } from './watch-node.ts';
import { clusterProbe } from './watch-resume.ts';

export type { NodeWatchResult } from './watch-node.ts';
export type { RelistReason } from './watch-resume.ts';

/** A node lock is worth taking only with at least this long left to hold it. */
export const MIN_HOLD_MS = 5_000;

export interface PodWatchLoopOptions {
  locks: LockManager;
  nodes: readonly string[];
  /** Watches one node while holding its lock, until the deadline or the lock is lost. */
  watch: (node: string, handle: LockHandle) => Promise<NodeWatchResult>;
  clock: Clock;
  log: Logger;
  lockPollMs: number;
  /** Nodes watched at once by this invocation. */
  maxParallel: number;
  /** Monotonic time at which every node watcher hands over. */
  stopAt: number;
  /** Aborts when the invocation is killed or times out. */
  signal: AbortSignal;
  /** Called when a node's lock was taken over from a holder that stopped renewing it (for metrics). */
  onLockTakeover?: (lock: string) => void;
}

export interface PodWatchResult {
  /** standby: every node's lock was held elsewhere until this invocation stopped. */
  role: 'holder' | 'standby';
  /** One entry per node this invocation watched (a node taken over twice appears twice). */
  nodes: NodeWatchResult[];
}

/**
 * One scheduled pod-watch invocation: a hot standby on every node's watch lock
 * (`pod-watch#<node>`, one lock per node so that one node's watcher failing or
 * being taken over never stops the others, and overlapping invocations can
 * share nodes when there are more than `maxParallel`). Every poll it tries
 * each lock it does not hold; for each one it gets, it watches that node until
 * shortly before its own deadline, and then hands over.
 */
export async function runPodWatch(options: PodWatchLoopOptions): Promise<PodWatchResult> {
  const { locks, clock, log, signal } = options;
  const acquireUntil = options.stopAt - MIN_HOLD_MS;
  const running = new Map<string, Promise<void>>();
  const results: NodeWatchResult[] = [];
  while (!signal.aborted && clock.monotonic() < acquireUntil) {
    for (const node of options.nodes) {
      if (running.size >= options.maxParallel || signal.aborted) break;
      if (running.has(node)) continue;
      let handle: LockHandle | undefined;
      try {
        handle = await locks.tryAcquire(podWatchLockName(node));
      } catch (err) {
        log.warn({ err, node }, 'pod watch lock not readable; retrying');
        continue;
      }
      if (!handle) continue;
      if (handle.takenOverFrom !== undefined) {
        log.warn(
          { node, epoch: handle.epoch, previousOwner: handle.takenOverFrom },
          'pod watch lock acquired from a holder that stopped renewing it',
        );
        options.onLockTakeover?.(handle.name);
      } else {
        log.info({ node, epoch: handle.epoch }, 'pod watch lock acquired');
      }
      const watching = options
        .watch(node, handle)
        .then(
          (result) => {
            results.push(result);
          },
          (err: unknown) => {
            log.error({ err, node }, 'pod watcher failed');
          },
        )
        .finally(() => running.delete(node));
      running.set(node, watching);
    }
    const wait = Math.min(options.lockPollMs, acquireUntil - clock.monotonic());
    if (wait <= 0) break;
    try {
      await clock.sleep(wait, signal);
    } catch {
      break;
    }
  }
  await Promise.all(running.values());
  if (results.length === 0)
    log.info('pod watch locks held elsewhere until this invocation stopped: stood by');
  return { role: results.length > 0 ? 'holder' : 'standby', nodes: results };
}

/**
 * The pod-watch function's one entry point: watch every configured node's
 * pods (as holder or hot standby) and publish one event per change, until
 * shortly before the invocation's deadline.
 */
export function podWatch(
  deps: Dependencies,
  publisher: EventPublisher,
  invocation: Invocation,
): Promise<PodWatchResult> {
  const { config, clock, kube, table } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const locks = new LockManager({
    store: deps.lockStore,
    // Unique per invocation, also when a warm sandbox runs several at once.
    owner: `${invocation.requestId}/${randomUUID().slice(0, 8)}`,
    ttlMs: config.lock.ttlMs,
    clock,
  });
  const knownPods = new KnownPodStore(table);
  const bookmarks = new WatchBookmarkStore(table, deps.lockStore, clock);
  const stopAt = invocation.deadline - config.podWatch.stopBeforeDeadlineMs;
  const cluster = clusterProbe(kube.core);
  return runPodWatch({
    locks,
    nodes: config.nodeNames,
    clock,
    log,
    lockPollMs: config.lock.pollMs,
    maxParallel: config.podWatch.maxParallel,
    stopAt,
    signal: invocation.signal,
    onLockTakeover: (lock) => deps.metrics.lockTakeover(lock),
    watch: (node, handle) =>
      watchNode({
        node,
        handle,
        locks,
        kubeContext: kube.context,
        core: kube.core,
        knownPods,
        bookmarks,
        cluster,
        publisher,
        clock,
        log,
        settings: {
          watchTimeoutSeconds: config.podWatch.watchTimeoutSeconds,
          flushMs: config.podWatch.flushMs,
          bookmarkIntervalMs: config.podWatch.bookmarkIntervalMs,
        },
        stopAt,
        signal: invocation.signal,
      }),
  });
}
