import { createPodReconciler, type Dependencies } from '../../app/dependencies.ts';
import { hintsOf, type PodEventDetail, type PodEventHint, parsePodEvent } from '../../events/pod-event.ts';
import type { Invocation } from '../../invocation.ts';
import type { Logger } from '../../log/logger.ts';
import type { SyncResult } from './pod-sync-result.ts';

/** Stop waiting for other invocations this long before the deadline, to fail cleanly (and be retried). */
const DEADLINE_MARGIN_MS = 3_000;

/** A pod event as pod-sync acts on it: the detail, and pod-watch's hints from the envelope's resources. */
export type PodSyncInput = PodEventDetail & { hints?: readonly PodEventHint[] };

/**
 * The pod event's detail and hints, parsed once for the whole invocation. A
 * malformed event is logged and rejected (InvalidEventError, which sends it
 * to the dead-letter queue) before anything is written.
 */
export function validPodSyncEvent(log: Logger, event: unknown): PodSyncInput {
  try {
    const parsed = parsePodEvent(event);
    return { ...parsed.detail, hints: hintsOf(parsed.resources) };
  } catch (err) {
    log.error({ err }, 'rejected pod event: nothing done, the event goes to the dead-letter queue');
    throw err;
  }
}

/**
 * The pod-sync function's one entry point: reconciles the pod key a validated
 * event names (validPodSyncEvent), counting the event and the reconcile's
 * latency by outcome.
 */
export async function podSync(
  deps: Dependencies,
  invocation: Invocation,
  detail: PodSyncInput,
): Promise<SyncResult> {
  const { clock, metrics } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const started = clock.monotonic();
  metrics.eventsConsumed(1);
  const reconciler = createPodReconciler(deps, {
    log: log.child({ event: detail.type, resourceVersion: detail.resourceVersion }),
    owner: invocation.requestId,
    waitUntil: invocation.deadline - DEADLINE_MARGIN_MS,
    signal: invocation.signal,
  });
  try {
    const result = await reconciler.reconcile(detail.namespace, detail.name, {
      type: detail.type,
      node: detail.node,
      uid: detail.uid,
      seen: detail.hints ?? [],
    });
    metrics.podSyncLatency(clock.monotonic() - started, result.outcome);
    return result;
  } catch (err) {
    metrics.podSyncLatency(clock.monotonic() - started, err instanceof Error ? err.name : 'error');
    throw err;
  }
}
