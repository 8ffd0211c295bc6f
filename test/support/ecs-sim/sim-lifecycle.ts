import type { SimContainer, SimTask } from './sim-types.ts';

/**
 * How a task moves through ECS's task lifecycle (ECS Developer Guide, "Amazon
 * ECS task lifecycle": PROVISIONING, PENDING, ACTIVATING, RUNNING,
 * DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED), one step at a time so
 * that every step is an event with a new version:
 *
 * - PROVISIONING → PENDING once the ENI is attached (the task's IP appears).
 * - PENDING → RUNNING once images are pulled and secrets fetched; a missing
 *   SSM parameter or an image that cannot be pulled stops it instead, with
 *   stopCode TaskFailedToStart and ECS's ResourceInitializationError or
 *   CannotPullContainerError reasons.
 * - RUNNING: containers without dependencies start; one with dependsOn
 *   SUCCESS starts when that container exits 0, and is stopped with exit
 *   code 143 and a CannotStartContainerError when it exits otherwise (as
 *   amazon-ecs-agent handles a dependency that can never be met).
 * - An essential container that exits stops the task (stopCode
 *   EssentialContainerExited, "Essential container in task exited"), as does
 *   StopTask (UserInitiated, the caller's reason): running containers get
 *   SIGTERM and exit 143, or, when they ignore it, SIGKILL after their
 *   stopTimeout (exit 137); containers that never started just stop.
 * - When every container stopped: DEPROVISIONING, then STOPPED.
 */

export interface LifecycleTimes {
  provisionMs: number;
  pullMs: number;
  /** How long a container that handles SIGTERM takes to exit. */
  termMs: number;
  deprovisionMs: number;
}

/** One step a task takes at a sim time, and what it does. */
export interface Step {
  at: number;
  apply: () => void;
}

/** The earliest pending step of a task, or undefined when it waits for nothing (running forever, or stopped). */
export function nextStep(
  task: SimTask,
  times: LifecycleTimes,
  onStart: (c: SimContainer, at: number) => void,
): Step | undefined {
  if (task.lastStatus === 'STOPPED') return undefined;
  const candidates: Step[] = [];
  if (task.nextStepAt !== undefined) {
    const at = task.nextStepAt;
    candidates.push({ at, apply: () => taskStep(task, at, times, onStart) });
  }
  for (const c of task.containers) {
    if (c.lastStatus === 'RUNNING' && c.stopsAt !== undefined) {
      const at = c.stopsAt;
      candidates.push({ at, apply: () => containerExits(task, c, at, times, onStart) });
    }
  }
  return candidates.sort((a, b) => a.at - b.at)[0];
}

function taskStep(
  task: SimTask,
  at: number,
  times: LifecycleTimes,
  onStart: (c: SimContainer, at: number) => void,
): void {
  switch (task.lastStatus) {
    case 'PROVISIONING':
      task.lastStatus = 'PENDING';
      task.pullStartedAt = at;
      task.nextStepAt = at + times.pullMs;
      return;
    case 'PENDING': {
      task.pullStoppedAt = at;
      task.nextStepAt = undefined;
      if (task.startFailure) {
        const failure = task.startFailure;
        for (const c of task.containers) {
          c.lastStatus = 'STOPPED';
          if (c.name === failure.container) c.reason = failure.reason;
        }
        stopTask(task, at, 'TaskFailedToStart', failure.reason, times);
        return;
      }
      task.lastStatus = 'RUNNING';
      task.startedAt = at;
      for (const c of task.containers) if (c.after.length === 0) startContainer(c, at, onStart);
      return;
    }
    case 'DEACTIVATING':
    case 'STOPPING':
      task.lastStatus = 'DEPROVISIONING';
      task.nextStepAt = at + times.deprovisionMs;
      return;
    case 'DEPROVISIONING':
      task.lastStatus = 'STOPPED';
      task.stoppedAt = at;
      task.nextStepAt = undefined;
      return;
    default:
      task.nextStepAt = undefined;
  }
}

function startContainer(c: SimContainer, at: number, onStart: (c: SimContainer, at: number) => void): void {
  c.lastStatus = 'RUNNING';
  c.startedAt = at;
  if (c.run.seconds !== undefined) {
    c.stopsAt = at + c.run.seconds * 1000;
    c.stopCode = c.run.exitCode;
  }
  onStart(c, at);
}

function containerExits(
  task: SimTask,
  c: SimContainer,
  at: number,
  times: LifecycleTimes,
  onStart: (c: SimContainer, at: number) => void,
): void {
  c.lastStatus = 'STOPPED';
  c.exitCode = c.stopCode ?? c.run.exitCode;
  c.stopsAt = undefined;
  if (task.desiredStatus === 'STOPPED') {
    if (task.containers.every((x) => x.lastStatus === 'STOPPED')) beginDeprovisioning(task, at, times);
    return;
  }
  for (const d of task.containers) {
    if (d.lastStatus !== 'PENDING' || !d.after.includes(c.name)) continue;
    if (c.exitCode === 0) {
      if (d.after.every((n) => task.containers.find((x) => x.name === n)?.exitCode === 0))
        startContainer(d, at, onStart);
    } else {
      blockDependents(task, d, c);
    }
  }
  const essentialStopped = task.containers.some((x) => x.essential && x.lastStatus === 'STOPPED');
  if (essentialStopped)
    stopTask(task, at, 'EssentialContainerExited', 'Essential container in task exited', times);
}

/** A dependency that can never be met: the agent stops the dependent (and its own dependents) with 143. */
function blockDependents(task: SimTask, d: SimContainer, failed: SimContainer): void {
  d.lastStatus = 'STOPPED';
  d.exitCode = 143;
  d.reason = `CannotStartContainerError: dependency graph: failed to resolve container ordering dependency [${failed.name}] for target [${d.name}] as dependency did not exit successfully`;
  for (const next of task.containers)
    if (next.lastStatus === 'PENDING' && next.after.includes(d.name)) blockDependents(task, next, d);
}

/** The task is asked to stop (an essential container exited, or StopTask). */
export function stopTask(
  task: SimTask,
  at: number,
  stopCode: string,
  reason: string,
  times: LifecycleTimes,
): void {
  if (task.desiredStatus === 'STOPPED') return;
  task.desiredStatus = 'STOPPED';
  task.stopCode = stopCode;
  task.stoppedReason = reason;
  task.stoppingAt = at;
  if (task.lastStatus === 'PROVISIONING' || task.lastStatus === 'PENDING') {
    for (const c of task.containers) c.lastStatus = 'STOPPED';
    beginDeprovisioning(task, at, times);
    return;
  }
  task.lastStatus = 'STOPPING';
  task.nextStepAt = undefined;
  for (const c of task.containers) {
    if (c.lastStatus === 'PENDING') c.lastStatus = 'STOPPED';
    else if (c.lastStatus === 'RUNNING') {
      const signalAt = c.run.ignoresTerm ? at + c.stopTimeoutSeconds * 1000 : at + times.termMs;
      if (c.stopsAt === undefined || signalAt < c.stopsAt) {
        c.stopsAt = signalAt;
        c.stopCode = c.run.ignoresTerm ? 137 : 143;
      }
    }
  }
  if (task.containers.every((c) => c.lastStatus === 'STOPPED')) beginDeprovisioning(task, at, times);
}

function beginDeprovisioning(task: SimTask, at: number, times: LifecycleTimes): void {
  task.lastStatus = 'DEPROVISIONING';
  task.nextStepAt = at + times.deprovisionMs;
}
