import type { Task } from '@aws-sdk/client-ecs';
import type { EcsPodRecord, TaskRecord } from './ecs-pod-record.ts';
import {
  compact,
  isNewer,
  mergeSnapshot,
  snapshotFromTask,
  type TaskSnapshot,
  withHealth,
} from './task-snapshot.ts';

/**
 * The record changes that follow from what ECS answered: pure functions from
 * the record read (and the answer) to the record to write. The I/O around
 * them is in ecs-pod-advance.ts.
 */

/** DescribeTasks may not show a task for this long after RunTask: ECS's eventual consistency (its RunTask documentation asks callers to retry DescribeTasks with back-off for up to five minutes). */
export const MISSING_GRACE_MS = 5 * 60_000;

type Next = Omit<EcsPodRecord, 'version'>;

/** RunTask started (or found) the task: its ARN, and its first state when ECS returned the task. */
export function launched(record: EcsPodRecord, answer: Task | string, now: number): Next {
  const arn = typeof answer === 'string' ? answer : (answer.taskArn ?? '');
  const snapshot = typeof answer === 'string' ? undefined : snapshotFromTask(answer);
  const current: TaskRecord = { ...record.current, arn };
  if (snapshot && isNewer(snapshot, current.snapshot))
    current.snapshot = mergeSnapshot(current.snapshot, snapshot, now);
  return { ...record, current, observedAt: now };
}

/** RunTask started nothing: the pod shows the reason; createPod reports it as a failed create. */
export function launchFailed(record: EcsPodRecord, reason: string): Next {
  return { ...record, current: { ...record.current, launchFailure: reason } };
}

/** A new task follows the stopped one: the next sequence number, requested now. */
export function restarted(record: EcsPodRecord, now: number): Next {
  return {
    ...record,
    previous: record.current,
    current: { seq: record.current.seq + 1, requestedAt: now },
    restarts: record.restarts + 1,
    observedAt: now,
  };
}

/** A retried create after ECS started nothing: a new request with the next sequence number. */
export function relaunched(record: EcsPodRecord, now: number): Next {
  return { ...record, current: { seq: record.current.seq + 1, requestedAt: now }, observedAt: now };
}

/**
 * A newer state of one of the pod's tasks (an event, DescribeTasks, StopTask's
 * answer), applied to the task it belongs to; undefined when it changes
 * nothing (an older or duplicated state, or a task that is not the pod's
 * current or previous one).
 */
export function observed(
  record: EcsPodRecord,
  snapshot: TaskSnapshot,
  now: number,
  seq?: number,
): Next | undefined {
  const apply = (task: TaskRecord): TaskRecord | undefined => {
    const matches = task.arn ? task.arn === snapshot.arn : seq !== undefined && task.seq === seq;
    if (!matches || task.launchFailure) return undefined;
    if (!isNewer(snapshot, task.snapshot)) {
      const health = withHealth(task.snapshot, snapshot, now);
      return health ? { ...task, snapshot: health } : undefined;
    }
    return { ...task, arn: snapshot.arn, snapshot: mergeSnapshot(task.snapshot, snapshot, now) };
  };
  const current = apply(record.current);
  if (current) return { ...record, current, observedAt: now };
  const previous = record.previous && apply(record.previous);
  if (previous) return { ...record, previous };
  return undefined;
}

/** DescribeTasks reported the current task MISSING: not yet visible, or gone for good (then it is reported stopped). */
export function missing(record: EcsPodRecord, now: number): Next {
  if (now - record.current.requestedAt < MISSING_GRACE_MS) return { ...record, observedAt: now };
  return lost(record, now);
}

/** ECS no longer knows the current task (it forgets stopped tasks after about an hour): it is reported stopped. */
export function lost(record: EcsPodRecord, now: number): Next {
  const { current } = record;
  const old = current.snapshot;
  const lost: TaskSnapshot = compact({
    arn: current.arn ?? '',
    version: (old?.version ?? 0) + 1,
    lastStatus: 'STOPPED',
    desiredStatus: 'STOPPED',
    stopCode: 'TaskLost',
    stoppedReason: 'ECS no longer knows this task',
    createdAt: old?.createdAt,
    startedAt: old?.startedAt,
    stoppedAt: now,
    updatedAt: now,
    podIp: old?.podIp,
    containers: (old?.containers ?? []).map((c) => ({ ...c, lastStatus: 'STOPPED' })),
  });
  return { ...record, current: { ...current, snapshot: mergeSnapshot(old, lost, now) }, observedAt: now };
}

/** The deleted pod's task stopped: the record becomes a tombstone. */
export function gone(record: EcsPodRecord, now: number): Next {
  return { ...record, goneAt: now };
}

/** deletePod asked for the task to stop. */
export function deleteRequested(record: EcsPodRecord, now: number): Next {
  return { ...record, deleteRequestedAt: now, deletes: record.deletes + 1 };
}

/**
 * StopTask answered: the task's state (desiredStatus STOPPED), or ECS not
 * knowing it, which means stopped long ago, or, right after RunTask, not
 * visible yet (eventual consistency: the stop is asked again on the next look).
 */
export function stopAnswered(record: EcsPodRecord, answer: Task | undefined, now: number): Next {
  const snapshot = answer ? snapshotFromTask(answer) : undefined;
  if (snapshot) {
    const next = observed(record, snapshot, now);
    if (next) return next;
    // Same version as ours: only remember that the stop was asked.
    const current = record.current.snapshot;
    return current
      ? { ...record, current: { ...record.current, snapshot: { ...current, desiredStatus: 'STOPPED' } } }
      : record;
  }
  return missing(record, now);
}
