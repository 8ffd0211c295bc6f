import { randomUUID } from 'node:crypto';
import type { EventPublisher } from '../events/publisher.ts';
import { type Invocation, invocationLog } from '../invocation.ts';
import { LockManager } from '../lock/lock.ts';
import { KnownPodStore } from '../pod/known/known-pods.ts';
import { type PodWatchResult, runPodWatch } from '../pod/watch/pod-watch.ts';
import { WatchBookmarkStore } from '../pod/watch/watch-bookmark.ts';
import { watchNode } from '../pod/watch/watch-node.ts';
import { clusterProbe } from '../pod/watch/watch-resume.ts';
import type { BaseDependencies } from './dependencies.ts';

/**
 * The pod-watch function's one entry point: watch every configured node's
 * pods (as holder or hot standby) and publish one event per change, until
 * shortly before the invocation's deadline.
 */
export function podWatch(
  deps: BaseDependencies,
  publisher: EventPublisher,
  invocation: Invocation,
): Promise<PodWatchResult> {
  const { config, clock, kube, table } = deps;
  const log = invocationLog(deps.log, invocation);
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
