import { hintsOf, type PodEventDetail, type PodEventHint, parsePodEvent } from '../events/pod-event.ts';
import { type Invocation, invocationLog } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import { apiServerOfKubeconfig, withApiServerAddress } from '../pod/env/api-server-address.ts';
import { kubeEnvSources } from '../pod/env/env-sources.ts';
import { KnownPodStore } from '../pod/known/known-pods.ts';
import { PodApplier, type PodApplierOptions } from '../pod/sync/pod-applier.ts';
import { PodDeleter, type PodDeleterOptions } from '../pod/sync/pod-deleter.ts';
import { KubePodEventRecorder } from '../pod/sync/pod-events.ts';
import { PodReconciler, type PodReconcilerOptions } from '../pod/sync/pod-reconciler.ts';
import type { SyncResult } from '../pod/sync/pod-sync-result.ts';
import type { Dependencies } from './dependencies.ts';

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
  const log = invocationLog(deps.log, invocation);
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

/** What a pod reconciler and its two step executors need, shared by all three. */
export type PodReconcilerParts = PodApplierOptions &
  PodDeleterOptions &
  Pick<PodReconcilerOptions, 'log' | 'waitUntil'>;

/**
 * A pod reconciler with its step executors: PodApplier (createPod/updatePod
 * under a claim) and PodDeleter (the deleting steps).
 */
export function buildPodReconciler(parts: PodReconcilerParts): PodReconciler {
  return new PodReconciler({ ...parts, applier: new PodApplier(parts), deleter: new PodDeleter(parts) });
}

/**
 * The reconciler pod-sync runs, built from a cold start's dependencies: the
 * one code path for reconciling a pod key, used by pod-sync for each event
 * and by the cluster reconciler for pods whose events were lost.
 */
export function createPodReconciler(
  deps: Dependencies,
  options: Pick<PodReconcilerParts, 'log' | 'owner' | 'waitUntil' | 'signal'> & {
    /** Defaults to the configured nodes. */
    nodes?: readonly string[];
  },
): PodReconciler {
  const { config, clock, kube, table, podProvider } = deps;
  return buildPodReconciler({
    core: kube.core,
    provider: podProvider,
    knownPods: new KnownPodStore(table),
    events: new KubePodEventRecorder({ core: kube.core, clock, log: options.log }),
    envSources: withApiServerAddress(
      kubeEnvSources(kube.core),
      config.pods.apiServer ?? apiServerOfKubeconfig(kube.context.server),
    ),
    nodes: options.nodes ?? config.nodeNames,
    clock,
    log: options.log,
    owner: options.owner,
    claimMs: config.pods.claimMs,
    waitUntil: options.waitUntil,
    env: {
      ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
      allocatable: config.node.capacity,
    },
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
