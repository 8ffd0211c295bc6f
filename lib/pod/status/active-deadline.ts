import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { KnownPod } from '../known/known-pods.ts';
import { isTerminalPhase } from './pod-status-builders.ts';

/**
 * `activeDeadlineSeconds`, as the kubelet enforces it
 * (pkg/kubelet/active_deadline.go): once a pod has been active for its
 * deadline, counted from `status.startTime`, its status becomes Failed with
 * reason DeadlineExceeded (generateAPIPodStatus), a Normal Event says so,
 * and its containers are killed (syncPod kills a pod whose status is Failed)
 * with the pod's termination grace period. A pod already Succeeded or Failed
 * is left alone (the kubelet no longer syncs it).
 *
 * pod-status's round decides it for every known pod (decideDeadline), from
 * the deadline recorded with the spec last applied (KnownPod.activeDeadlineSeconds,
 * so an update of the deadline takes effect once pod-sync applied it) and
 * the start time the provider reports; the status write checks it again
 * against the pod as read from the API server. The record's statusHash
 * carries the progress, so that a failed kill is retried and nothing of
 * ours writes over the pod afterwards: DEADLINE_MARK (Failed written, kill
 * pending), DEADLINE_KILLED_MARK (the provider was told to stop it).
 */

export const DEADLINE_REASON = 'DeadlineExceeded';
export const DEADLINE_MESSAGE = 'Pod was active on the node longer than the specified deadline';

/** statusHash once the DeadlineExceeded status is written and the kill is pending. */
export const DEADLINE_MARK = 'deadline-exceeded';
/** statusHash once the provider was told to stop the pod after its deadline. */
export const DEADLINE_KILLED_MARK = 'deadline-killed';

/** Exit code written for a container killed at the deadline (SIGKILL's 128 + 9). */
const KILLED_EXIT_CODE = 137;

/** A time as the API or a provider gives it: a Date, an RFC 3339 string, or nothing. */
type Time = Date | string | undefined;

function epochMs(time: Time): number | undefined {
  if (time === undefined) return undefined;
  const ms = time instanceof Date ? time.getTime() : Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The kubelet's pastActiveDeadline: a deadline, a start time, and at least that long since. */
export function pastActiveDeadline(
  activeDeadlineSeconds: number | undefined,
  startTime: Time,
  nowMs: number,
): boolean {
  if (activeDeadlineSeconds === undefined) return false;
  const start = epochMs(startTime);
  if (start === undefined) return false;
  return nowMs - start >= activeDeadlineSeconds * 1000;
}

/**
 * What a round does about a known pod's deadline:
 * - `none`: nothing; its provider status is written as usual;
 * - `fail`: past its deadline: write the DeadlineExceeded status, then kill it;
 * - `kill`: the status is written, the provider still has the pod: kill it;
 * - `done`: handled; nothing more is written for it.
 * A pod being deleted is left to the delete (`none`).
 */
export type DeadlineStep = 'none' | 'fail' | 'kill' | 'done';

export function decideDeadline(
  record: Pick<KnownPod, 'statusHash' | 'activeDeadlineSeconds' | 'forceDeleteAt'>,
  /** The provider's reading of the pod this round; undefined when it does not have it. */
  reported: V1PodStatus | undefined,
  nowMs: number,
): DeadlineStep {
  if (record.forceDeleteAt !== undefined) return 'none';
  if (record.statusHash === DEADLINE_KILLED_MARK) return 'done';
  if (record.statusHash === DEADLINE_MARK) return reported ? 'kill' : 'done';
  if (!reported || isTerminalPhase(reported.phase)) return 'none';
  return pastActiveDeadline(record.activeDeadlineSeconds, reported.startTime, nowMs) ? 'fail' : 'none';
}

/**
 * The status to write over `pod`'s when it is past its deadline (undefined:
 * none, because it is finished or, by the API server's spec and start
 * time, not past it). Its running containers are written terminated, since
 * they are being killed and nothing of ours writes over a Failed status.
 * `fallbackStart`: the provider's start time, for a pod whose status has none yet.
 */
export function deadlineExceededStatus(
  pod: V1Pod,
  nowMs: number,
  fallbackStart?: Time,
): V1PodStatus | undefined {
  const current = pod.status;
  if (isTerminalPhase(current?.phase)) return undefined;
  if (!pastActiveDeadline(pod.spec?.activeDeadlineSeconds, current?.startTime ?? fallbackStart, nowMs))
    return undefined;
  const finishedAt = new Date(Math.floor(nowMs / 1000) * 1000);
  const containerStatuses = current?.containerStatuses?.map((c) => {
    const running = c.state?.running;
    if (!running) return c;
    return {
      ...c,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode: KILLED_EXIT_CODE,
          reason: DEADLINE_REASON,
          message: DEADLINE_MESSAGE,
          finishedAt,
          ...(running.startedAt ? { startedAt: running.startedAt } : {}),
          ...(c.containerID ? { containerID: c.containerID } : {}),
        },
      },
    };
  });
  const conditions = current?.conditions?.map((c) =>
    (c.type === 'Ready' || c.type === 'ContainersReady') && c.status === 'True'
      ? { ...c, status: 'False', lastTransitionTime: finishedAt }
      : c,
  );
  return {
    ...current,
    phase: 'Failed',
    reason: DEADLINE_REASON,
    message: DEADLINE_MESSAGE,
    ...(containerStatuses ? { containerStatuses } : {}),
    ...(conditions ? { conditions } : {}),
  };
}

/** Whether `pod` already carries the DeadlineExceeded status (a previous round wrote it). */
export function failedByDeadline(pod: V1Pod): boolean {
  return pod.status?.phase === 'Failed' && pod.status.reason === DEADLINE_REASON;
}

/**
 * The pod as deletePod is handed it to kill it at its deadline: a graceful
 * stop with the pod's termination grace period from now, as the kubelet's
 * killPod stops a pod that is not being deleted (providers read a graceful
 * delete from deletionTimestamp and deletionGracePeriodSeconds).
 */
export function podToKill(pod: V1Pod, nowMs: number): V1Pod {
  const grace = Math.max(0, pod.spec?.terminationGracePeriodSeconds ?? 30);
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      deletionTimestamp: new Date(nowMs + grace * 1000),
      deletionGracePeriodSeconds: grace,
    },
  };
}
