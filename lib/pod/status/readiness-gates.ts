import type { V1Pod, V1PodCondition, V1PodReadinessGate, V1PodStatus } from '@kubernetes/client-node';

/**
 * Readiness gates (KEP 580), as the kubelet's status manager applies them
 * (pkg/kubelet/status/generate.go, GeneratePodReadyCondition): a pod is
 * Ready when its containers are (ContainersReady) and the condition of each
 * of its readiness gates, which another controller sets, is True. The
 * providers report Ready from their containers alone; the gates are applied
 * here, where the pod's current conditions are known: whenever a status is
 * written, and when a gate's condition changes (pod-sync's `readiness`
 * step, woken by the watch, which announces such a change).
 */

/** The kubelet's reason for a Ready held by a gate. */
export const READINESS_GATES_NOT_READY = 'ReadinessGatesNotReady';

/** The API server keeps times in whole seconds. */
function wholeSeconds(epochMs: number): Date {
  return new Date(Math.floor(epochMs / 1000) * 1000);
}

/**
 * The Ready condition `conditions` call for under `gates`, or undefined
 * when the containers are not ready (then Ready is what the provider says:
 * ContainersNotReady) or there is no gate. `previous` is the Ready condition
 * the pod carries: its transition time stays while its status does;
 * otherwise the change is dated `nowMs`.
 */
export function gatedReadyCondition(
  conditions: readonly V1PodCondition[],
  gates: readonly V1PodReadinessGate[] | undefined,
  previous: V1PodCondition | undefined,
  nowMs: number,
): V1PodCondition | undefined {
  if (!gates?.length) return undefined;
  const containers = conditions.find((c) => c.type === 'ContainersReady');
  if (containers?.status !== 'True') return undefined;
  const unready = gates.flatMap((gate) => {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c) return [`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`];
    if (c.status !== 'True')
      return [`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`];
    return [];
  });
  const status = unready.length > 0 ? 'False' : 'True';
  const since = (fallback: V1PodCondition['lastTransitionTime']) =>
    previous?.status === status && previous.lastTransitionTime
      ? previous.lastTransitionTime
      : (fallback ?? wholeSeconds(nowMs));
  if (status === 'True') {
    const reported = conditions.find((c) => c.type === 'Ready');
    const changedAt = reported?.status === 'True' ? reported.lastTransitionTime : undefined;
    return { type: 'Ready', status, lastTransitionTime: since(changedAt ?? wholeSeconds(nowMs)) };
  }
  return {
    type: 'Ready',
    status,
    reason: READINESS_GATES_NOT_READY,
    message: unready.join(', '),
    lastTransitionTime: since(wholeSeconds(nowMs)),
  };
}

/** `status` with its Ready condition under the pod's readiness gates (unchanged without gates). */
export function withReadinessGates(
  status: V1PodStatus,
  gates: readonly V1PodReadinessGate[] | undefined,
  previous: V1PodCondition | undefined,
  nowMs: number,
): V1PodStatus {
  const conditions = status.conditions ?? [];
  const ready = gatedReadyCondition(conditions, gates, previous, nowMs);
  if (!ready) return status;
  return { ...status, conditions: conditions.map((c) => (c.type === 'Ready' ? ready : c)) };
}

/**
 * Whether the Ready condition the pod carries is not what its readiness
 * gates call for now (a gate's condition changed since the status was
 * written): pod-sync then writes it again.
 */
export function readinessGatesStale(pod: V1Pod): boolean {
  const conditions = pod.status?.conditions ?? [];
  const current = conditions.find((c) => c.type === 'Ready');
  const wanted = gatedReadyCondition(conditions, pod.spec?.readinessGates, current, 0);
  if (!wanted) return false;
  return current?.status !== wanted.status || (current.message ?? '') !== (wanted.message ?? '');
}

/** What the watch compares to tell a change of a gate's condition: each gate's status, in order. */
export function readinessGatesProjection(pod: {
  spec?: unknown;
  status?: { conditions?: ReadonlyArray<{ type?: string; status?: string }> };
}): string {
  const spec = pod.spec as { readinessGates?: ReadonlyArray<{ conditionType?: string }> } | undefined;
  const gates = spec?.readinessGates ?? [];
  if (gates.length === 0) return '';
  const conditions = pod.status?.conditions ?? [];
  return gates.map((g) => conditions.find((c) => c.type === g.conditionType)?.status ?? '-').join(',');
}
