import { restartDelayMs, restartsAfterExit } from '../kubelet-backoff.ts';
import type { EcsPodRecord, TaskRecord } from './ecs-pod-record.ts';
import { isStopped } from './task-snapshot.ts';

/**
 * What to do next for one pod: the pure core of the provider. Lambda keeps
 * no process between invocations, so a pod moves on when someone looks at
 * it: createPod, the task-state function on each pushed event, and
 * pod-status's polls (getPod, listPods). Each look reads the record, asks
 * this decision, makes the one ECS call it names and writes the record
 * conditionally, so two lookers never both act.
 *
 * A pod whose task stopped is restarted as a new task (restartCount + 1, a
 * new ENI and IP, emptyDir volumes empty) when its restartPolicy says so,
 * after the kubelet's back-off: ECS's own container restart policy restarts
 * one container in place but waits at least 60 s between attempts
 * (restartAttemptPeriod), never backs off, and reports no restart count, so
 * neither the kubelet's timing nor its status could be reproduced with it.
 */
export type EcsPodAction =
  /** RunTask for `current` (its clientToken returns the task when it was created already). */
  | { kind: 'launch' }
  /** A new task after `current` stopped: RunTask with the next sequence number. */
  | { kind: 'restart'; replace: boolean }
  /** StopTask for `current` (a delete, a replacement, or `liveness`: a container's liveness health check failed). */
  | { kind: 'stop'; arn: string; liveness?: string }
  /** The deleted pod's task stopped: the record becomes a tombstone. */
  | { kind: 'gone' }
  /** DescribeTasks: nothing told us about `current` for a poll interval. */
  | { kind: 'refresh'; arn: string }
  | { kind: 'none' };

/** When a stopped task is restarted: `at` (epoch ms), and the back-off it waits. */
export interface RestartPlan {
  at: number;
  delayMs: number;
}

export function decideEcsPod(record: EcsPodRecord, now: number, pollMs: number): EcsPodAction {
  const { current } = record;
  const stopped = isStopped(current.snapshot);
  if (record.goneAt !== undefined) return { kind: 'none' };
  if (record.deleteRequestedAt !== undefined) {
    if (current.launchFailure) return { kind: 'gone' };
    if (!current.arn) return { kind: 'launch' };
    if (stopped) return { kind: 'gone' };
    if (current.snapshot?.desiredStatus !== 'STOPPED') return { kind: 'stop', arn: current.arn };
    return stale(record, now, pollMs) ? { kind: 'refresh', arn: current.arn } : { kind: 'none' };
  }
  if (current.launchFailure) return { kind: 'none' };
  if (!current.arn) return { kind: 'launch' };
  if (current.replaced && !stopped && current.snapshot?.desiredStatus !== 'STOPPED')
    return { kind: 'stop', arn: current.arn };
  const unhealthy = unhealthyLiveness(record);
  if (unhealthy && !stopped && current.snapshot?.desiredStatus !== 'STOPPED')
    return { kind: 'stop', arn: current.arn, liveness: unhealthy };
  if (stopped) {
    const plan = restartPlan(record);
    if (plan && now >= plan.at) return { kind: 'restart', replace: current.replaced === true };
    return { kind: 'none' };
  }
  // ECS reports health through DescribeTasks only: a pod with health checks is described on every look.
  const every = record.containers.some((c) => c.health) ? 0 : pollMs;
  return stale(record, now, every) ? { kind: 'refresh', arn: current.arn } : { kind: 'none' };
}

/** The first running container whose liveness health check ECS reports UNHEALTHY, by name. */
export function unhealthyLiveness(record: EcsPodRecord): string | undefined {
  const byName = new Map((record.current.snapshot?.containers ?? []).map((c) => [c.name, c]));
  return record.containers.find((c) => {
    const s = byName.get(c.name);
    return c.health?.liveness && s?.lastStatus === 'RUNNING' && s.healthStatus === 'UNHEALTHY';
  })?.name;
}

function stale(record: EcsPodRecord, now: number, pollMs: number): boolean {
  return now - record.observedAt >= pollMs;
}

/**
 * When the pod's stopped task is followed by a new one, or undefined when
 * it is not (the restartPolicy says no, or the pod is being deleted). A task
 * replaced for a changed spec is followed at once.
 */
export function restartPlan(record: EcsPodRecord): RestartPlan | undefined {
  const { current } = record;
  const snapshot = current.snapshot;
  if (!snapshot || !isStopped(snapshot) || record.deleteRequestedAt !== undefined) return undefined;
  const stoppedAt = snapshot.stoppedAt ?? snapshot.updatedAt ?? current.requestedAt;
  if (current.replaced) return { at: stoppedAt, delayMs: 0 };
  if (!restartsAfterExit(record.restartPolicy, taskExitCode(record, current))) return undefined;
  const ranMs = snapshot.startedAt !== undefined ? Math.max(0, stoppedAt - snapshot.startedAt) : 0;
  const delayMs = restartDelayMs(record.restarts, ranMs);
  return { at: stoppedAt + delayMs, delayMs };
}

/**
 * The exit code that decides a restart: the first non-zero exit code of an
 * app container (or of an init container that failed), undefined when a
 * container never ran (the task failed to start), 0 when every app container
 * exited 0.
 */
export function taskExitCode(record: EcsPodRecord, task: TaskRecord): number | undefined {
  const containers = task.snapshot?.containers ?? [];
  const byName = new Map(containers.map((c) => [c.name, c]));
  for (const init of record.initContainers) {
    const c = byName.get(init.name);
    if (c?.exitCode !== undefined && c.exitCode !== 0) return c.exitCode;
    if (c?.exitCode === undefined) return undefined;
  }
  let code = 0;
  for (const app of record.containers) {
    const c = byName.get(app.name);
    if (c?.exitCode === undefined) return undefined;
    if (c.exitCode !== 0 && code === 0) code = c.exitCode;
  }
  return code;
}
