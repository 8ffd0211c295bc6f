import type { V1ContainerStatus, V1Pod, V1PodReadinessGate, V1PodStatus } from '@kubernetes/client-node';
import type { KnownPod } from '../known/known-pods.ts';
import { podStatusHash } from '../pod-hash.ts';
import { withReadinessGates } from './readiness-gates.ts';

/**
 * The pod statuses a virtual kubelet writes, as pure functions of the current
 * status: the provider's merged with what other actors own, and the ones we
 * derive ourselves (lost, terminated, provider failed), as virtual-kubelet's
 * node/sync.go and node/pod.go build them. The kubelet owns a pod's status,
 * so a write replaces it whole, keeping only the conditions other actors own.
 */

/** virtual-kubelet's reasons and messages (node/sync.go). */
export const STATUS_REASONS = {
  providerFailed: 'ProviderFailed',
  notFound: 'NotFound',
  notFoundMessage: 'The pod status was not found and may have been deleted from the provider',
  containerNotFoundMessage: 'Container was not found and was likely deleted',
  terminated: 'Terminated',
  containerTerminatedMessage: 'Container was terminated. The exit code may not reflect the real exit code',
} as const;

/**
 * statusHash values for the statuses we derive ourselves rather than copy
 * from the provider. A record with TERMINATED_MARK and a force delete
 * pending says, without reading the pod, that the pod is terminating and no
 * longer running: pod-status wrote a Succeeded status (which nothing of ours
 * overwrites) after the provider had deleted it.
 */
export const TERMINATED_MARK = 'terminated';
export const LOST_MARK = 'lost';

/** Exit code virtual-kubelet reports for a container the provider lost. */
export const CONTAINER_NOT_FOUND_EXIT_CODE = -137;

/**
 * Conditions the kubelet computes from its containers: a provider that does
 * not report them drops them. Any other type (PodScheduled from the
 * scheduler, readiness gates...) is kept unless the provider reports it.
 */
const KUBELET_CONDITIONS = new Set(['Ready', 'Initialized', 'ContainersReady']);

/** The part of a pod status running() reads: a V1PodStatus, or the same as JSON from a watch. */
export interface ContainerStates {
  containerStatuses?: ReadonlyArray<{
    state?: { running?: unknown; terminated?: unknown; waiting?: unknown };
  }>;
}

/**
 * virtual-kubelet's running() (node/podcontroller.go): some container is neither
 * terminated nor waiting. No container statuses (never started) counts as not
 * running.
 */
export function running(status: ContainerStates | undefined): boolean {
  return (status?.containerStatuses ?? []).some((c) => !c.state?.terminated && !c.state?.waiting);
}

export function isTerminalPhase(phase: string | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * The status to write: the provider's, plus the conditions of the current
 * status that neither the provider reports nor the kubelet owns, and the
 * qosClass the API server assigned when the provider says none.
 */
export function mergeStatus(
  current: V1PodStatus | undefined,
  reported: V1PodStatus,
  /** The pod's readiness gates, which hold Ready (readiness-gates.ts), and when the status is written. */
  gates?: { readinessGates: readonly V1PodReadinessGate[] | undefined; nowMs: number },
): V1PodStatus {
  const reportedTypes = new Set((reported.conditions ?? []).map((c) => c.type));
  const kept = (current?.conditions ?? []).filter(
    (c) => !reportedTypes.has(c.type) && !KUBELET_CONDITIONS.has(c.type),
  );
  const conditions = [...(reported.conditions ?? []), ...kept];
  const qosClass = reported.qosClass ?? current?.qosClass;
  const merged = {
    ...reported,
    ...(conditions.length > 0 ? { conditions } : {}),
    ...(qosClass ? { qosClass } : {}),
  };
  if (!gates) return merged;
  const previous = current?.conditions?.find((c) => c.type === 'Ready');
  return withReadinessGates(merged, gates.readinessGates, previous, gates.nowMs);
}

/** The API server keeps times in whole seconds. */
function wholeSeconds(epochMs: number): Date {
  return new Date(Math.floor(epochMs / 1000) * 1000);
}

type TerminatedState = NonNullable<NonNullable<V1ContainerStatus['state']>['terminated']>;

/**
 * The container statuses with every container (or only the running ones)
 * terminated as `how` says, finished at `nowMs`. A container that already
 * terminated keeps its own record.
 */
function terminateContainers(
  statuses: V1ContainerStatus[] | undefined,
  how: Pick<TerminatedState, 'exitCode' | 'reason' | 'message'>,
  nowMs: number,
  onlyRunning: boolean,
): V1ContainerStatus[] | undefined {
  const finishedAt = wholeSeconds(nowMs);
  return statuses?.map((c) => {
    if (onlyRunning && !c.state?.running) return c;
    const terminated = c.state?.terminated ?? {
      ...how,
      finishedAt,
      ...(c.state?.running?.startedAt ? { startedAt: c.state.running.startedAt } : {}),
      ...(c.containerID ? { containerID: c.containerID } : {}),
    };
    return { ...c, ready: false, started: false, state: { terminated } };
  });
}

/**
 * virtual-kubelet's status for a pod the provider lost (it had it, it no
 * longer does, and nobody deleted it): Failed/NotFound, running containers
 * terminated with exit code -137. The owning controller then replaces it.
 */
export function lostStatus(current: V1PodStatus | undefined, nowMs: number): V1PodStatus {
  const containerStatuses = terminateContainers(
    current?.containerStatuses,
    {
      exitCode: CONTAINER_NOT_FOUND_EXIT_CODE,
      reason: STATUS_REASONS.notFound,
      message: STATUS_REASONS.containerNotFoundMessage,
    },
    nowMs,
    true,
  );
  return {
    ...current,
    phase: 'Failed',
    reason: STATUS_REASONS.notFound,
    message: STATUS_REASONS.notFoundMessage,
    ...(containerStatuses ? { containerStatuses } : {}),
  };
}

/**
 * virtual-kubelet's status for a pod whose provider delete finished (the
 * provider no longer has it): Succeeded/Terminated, every container
 * terminated. It makes the pod "not running", so it is force-deleted at once.
 */
export function terminatedStatus(current: V1PodStatus | undefined, nowMs: number): V1PodStatus {
  const containerStatuses = terminateContainers(
    current?.containerStatuses,
    { exitCode: 0, reason: STATUS_REASONS.terminated, message: STATUS_REASONS.containerTerminatedMessage },
    nowMs,
    false,
  );
  return {
    ...current,
    phase: 'Succeeded',
    reason: STATUS_REASONS.terminated,
    ...(containerStatuses ? { containerStatuses } : {}),
  };
}

/** virtual-kubelet's handleProviderError (node/pod.go): reason ProviderFailed, phase Failed when the pod never restarts, else Pending. */
export function providerFailedStatus(pod: V1Pod, message: string): V1PodStatus {
  return {
    ...pod.status,
    phase: pod.spec?.restartPolicy === 'Never' ? 'Failed' : 'Pending',
    reason: STATUS_REASONS.providerFailed,
    message,
  };
}

/**
 * A pod the provider cannot start yet (a volume's ConfigMap or Secret is
 * missing), as the kubelet shows one whose volumes are not mounted: Pending,
 * every container waiting (init containers PodInitializing, app containers
 * ContainerCreating, or PodInitializing behind init containers).
 */
export function waitingStatus(pod: V1Pod): V1PodStatus {
  const inits = pod.spec?.initContainers ?? [];
  const waiting = (c: { name: string; image?: string }, reason: string) => ({
    name: c.name,
    image: c.image ?? '',
    imageID: '',
    ready: false,
    restartCount: 0,
    started: false,
    state: { waiting: { reason } },
  });
  return {
    ...pod.status,
    phase: 'Pending',
    ...(inits.length > 0 ? { initContainerStatuses: inits.map((c) => waiting(c, 'PodInitializing')) } : {}),
    containerStatuses: (pod.spec?.containers ?? []).map((c) =>
      waiting(c, inits.length > 0 ? 'PodInitializing' : 'ContainerCreating'),
    ),
  };
}

/**
 * What the provider reported for a pod, if it is not what the record says
 * was last written: the status and its hash. The one test of "changed"
 * shared by pod-status's poll and pod-sync's push.
 */
export function reportedStatusToWrite(
  record: Pick<KnownPod, 'statusHash'>,
  reported: V1PodStatus | undefined,
): { status: V1PodStatus; hash: string } | undefined {
  if (!reported) return undefined;
  const hash = podStatusHash(reported);
  return hash === record.statusHash ? undefined : { status: reported, hash };
}
