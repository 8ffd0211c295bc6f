import type { V1PodCondition, V1PodStatus } from '@kubernetes/client-node';

/**
 * The order of the provider statuses written to a pod. Several writers write
 * what the provider reported (pod-sync right after its create or update,
 * pod-status's polls, a poll of a second holder for a moment, a delivery
 * retried by the bus), each from its own reading of the provider and each
 * guarded by the pod's resourceVersion only, which orders the writes but not
 * the readings: a write from a reading taken before the one the pod shows
 * would move the pod back (Running to Pending, a running container to
 * ContainerCreating, which a terminating pod reads as "no longer running").
 *
 * So every provider status is stamped with when it was read, in a condition
 * of its own inside the status itself, where it is compared and replaced
 * under the same resourceVersion guard as the status it stamps: a write read
 * before the stamp the pod carries is refused (and the pod keeps the newer
 * status), across invocations and processes. When it was read: pod-status's
 * poll reads every pod of a node with one list, so its statuses are stamped
 * with when that list began, however long the round then takes to write
 * them; a create or update reports the pod as it stands when the call returns
 * (AppliedPodStatus), so its status is stamped with then; a failed create
 * with when the call began (anything read during the call is newer than its
 * failure). Wall clocks of the writers are compared; their skew (NTP,
 * milliseconds) is far below the seconds that separate the readings at stake.
 */

/** The condition carrying the stamp: a qualified name, as the API server requires of other conditions. */
export const READ_AT_CONDITION = 'virtual-kubelet.io/provider-status-read';
const READ_AT_REASON = 'ProviderStatusRead';

/** When the reading of the status the pod carries began (epoch ms), if it is stamped. */
export function statusReadAt(status: V1PodStatus | undefined): number | undefined {
  const stamp = status?.conditions?.find((c) => c.type === READ_AT_CONDITION)?.message;
  const ms = stamp === undefined ? Number.NaN : Date.parse(stamp);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The status stamped as read at `readAtMs` (replacing any stamp it had). */
export function stampReadAt(status: V1PodStatus, readAtMs: number): V1PodStatus {
  const stamp: V1PodCondition = {
    type: READ_AT_CONDITION,
    status: 'True',
    reason: READ_AT_REASON,
    message: new Date(readAtMs).toISOString(),
  };
  const others = (status.conditions ?? []).filter((c) => c.type !== READ_AT_CONDITION);
  return { ...status, conditions: [...others, stamp] };
}

/** A status read at `readAtMs` is older than the one `current` carries: writing it would move the pod back. */
export function isOlderReading(current: V1PodStatus | undefined, readAtMs: number): boolean {
  const carried = statusReadAt(current);
  return carried !== undefined && readAtMs < carried;
}
