import type { Dependencies } from '../app/dependencies.ts';
import type { Invocation } from '../invocation.ts';
import { type LeaderLoopResult, runAsLeader, settledValues } from '../lock/leader-loop.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import { DanglingPodCleaner, type DanglingResult } from './dangling.ts';
import { KnownPodStore } from './known-pods.ts';
import { type NodeStatusResult, PodStatusSyncer } from './pod-status-syncer.ts';

/** The lock that makes one invocation at a time the pod-status holder for all nodes of a deployment. */
export const POD_STATUS_LOCK = 'pod-status';

/** What one round did, for metrics and tests. */
export interface PodStatusRound {
  round: number;
  nodes: NodeStatusResult[];
  forceDeleted: number;
  /** Present on rounds that looked for dangling pods. */
  dangling?: DanglingResult[];
}

export type PodStatusResult = LeaderLoopResult;

export interface PodStatusHooks {
  /** Called after each round. */
  onRound?: (round: PodStatusRound) => void;
}

/**
 * The pod-status function's one entry point. Like the heartbeat, it stands by
 * for the `pod-status` lock, then every SVK_POD_STATUS_INTERVAL_SECONDS until
 * shortly before its deadline: writes changed provider statuses of every
 * node's known pods, force-deletes pods whose grace period ended, and (when
 * it takes over, then every SVK_POD_DANGLING_INTERVAL_SECONDS) deletes
 * dangling provider pods. Its API writes are not fenced: two holders for a
 * moment (a stale lock taken over) write the same statuses, and every
 * DynamoDB write is conditional.
 */
export async function podStatus(
  deps: Dependencies,
  invocation: Invocation,
  hooks: PodStatusHooks = {},
): Promise<PodStatusResult> {
  const { config, clock, kube, table, podProvider } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const knownPods = new KnownPodStore(table);
  const common = {
    core: kube.core,
    provider: podProvider,
    knownPods,
    clock,
    log,
    maxParallel: config.pods.maxParallel,
  };
  const syncer = new PodStatusSyncer(common);
  const cleaner = new DanglingPodCleaner(common);
  const { danglingIntervalMs } = config.pods;
  const nodes = config.nodeNames;
  let danglingAt = Number.NEGATIVE_INFINITY;
  return runAsLeader(
    {
      lock: POD_STATUS_LOCK,
      lockStore: deps.lockStore,
      clock,
      log,
      invocation,
      lockTtlMs: config.lock.ttlMs,
      lockPollMs: config.lock.pollMs,
      intervalMs: config.pods.statusIntervalMs,
      stopBeforeDeadlineMs: config.pods.statusStopBeforeDeadlineMs,
      onLockTakeover: (lock) => deps.metrics.lockTakeover(lock),
    },
    {
      round: async (stop, number) => {
        const started = clock.monotonic();
        const round: PodStatusRound = { round: number, nodes: [], forceDeleted: 0 };
        /** One pass over every node, in parallel; a node whose pass failed is logged and left out. */
        const eachNode = async <T>(pass: (node: string) => Promise<T>, failed: string): Promise<T[]> =>
          settledValues(
            await mapSettledLimit(nodes, config.pods.maxParallel, pass),
            nodes,
            log,
            stop,
            failed,
          );
        if (started - danglingAt >= danglingIntervalMs) {
          danglingAt = started;
          round.dangling = await eachNode((n) => cleaner.cleanNode(n, stop), 'dangling pod pass failed');
        }
        round.nodes = await eachNode((n) => syncer.syncNode(n, stop), 'pod status round failed');
        try {
          round.forceDeleted = await syncer.forceDeleteDue(nodes, stop);
        } catch (err) {
          if (!stop.aborted) log.warn({ err }, 'force delete pass failed');
        }
        hooks.onRound?.(round);
      },
    },
  );
}
