import type { Dependencies } from '../../app/dependencies.ts';
import { settledValues } from '../../lock/leader-loop.ts';
import type { Logger } from '../../log/logger.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import { KnownPodStore } from '../known/known-pods.ts';
import { KubePodEventRecorder } from '../sync/pod-events.ts';
import { DanglingPodCleaner, type DanglingResult } from './dangling.ts';
import { type NodeStatusResult, PodStatusSyncer } from './pod-status-syncer.ts';

/** What one round did, for metrics and tests. */
export interface PodStatusRound {
  round: number;
  nodes: NodeStatusResult[];
  forceDeleted: number;
  /** Present on rounds that looked for dangling pods. */
  dangling?: DanglingResult[];
}

/**
 * pod-status's rounds, whoever drives them (the continuous function's
 * holder loop, or a tick): each round writes changed provider statuses of
 * every node's known pods and force-deletes pods whose grace period ended;
 * the first round, then one every SVK_POD_DANGLING_INTERVAL_SECONDS, also
 * deletes dangling provider pods. Keeps only when it last looked for
 * dangling pods.
 */
export class PodStatusRounds {
  #danglingAt = Number.NEGATIVE_INFINITY;
  #rounds = 0;

  constructor(private readonly deps: Dependencies) {}

  /** One round; a node whose pass failed is logged (unless stopped) and left out. */
  async round(stop: AbortSignal, log: Logger): Promise<PodStatusRound> {
    const { config, clock, kube, table, podProvider } = this.deps;
    const common = {
      core: kube.core,
      provider: podProvider,
      knownPods: new KnownPodStore(table),
      clock,
      log,
      maxParallel: config.pods.maxParallel,
      handOffMs: config.pods.forceDeleteHandOffMs,
    };
    const syncer = new PodStatusSyncer({
      ...common,
      events: new KubePodEventRecorder({ core: kube.core, clock, log }),
    });
    const nodes = config.nodeNames;
    const started = clock.monotonic();
    const round: PodStatusRound = { round: ++this.#rounds, nodes: [], forceDeleted: 0 };
    const eachNode = async <T>(pass: (node: string) => Promise<T>, failed: string): Promise<T[]> =>
      settledValues(await mapSettledLimit(nodes, config.pods.maxParallel, pass), nodes, log, stop, failed);
    if (started - this.#danglingAt >= config.pods.danglingIntervalMs) {
      this.#danglingAt = started;
      const cleaner = new DanglingPodCleaner(common);
      round.dangling = await eachNode((n) => cleaner.cleanNode(n, stop), 'dangling pod pass failed');
    }
    round.nodes = await eachNode((n) => syncer.syncNode(n, stop), 'pod status round failed');
    try {
      round.forceDeleted = await syncer.forceDeleteDue(nodes, stop);
    } catch (err) {
      if (!stop.aborted) log.warn({ err }, 'force delete pass failed');
    }
    return round;
  }
}
