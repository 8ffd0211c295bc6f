import { restartDelayMs } from '../kubelet-backoff.ts';
import { type Instance, instancesOf, type ObservedPod } from './observed-pod.ts';
import type { ContainerPlan, PodPlan, RestartPolicy } from './pod-plan.ts';

/**
 * Where each container of a pod stands, and so what to do next: the pure
 * core of the provider's state machine. Lambda keeps no process alive
 * between invocations, so a pod moves on only when someone looks at it:
 * createPod once, then pod-status's polls (getPod, listPods) every few
 * seconds. Each look reads the engine, computes these views, runs the few
 * short engine calls they ask for (create, start, remove; image pulls run in
 * the background) and reports the status. Nothing is ever waited for.
 *
 * Init containers run one at a time, in order, each after the previous one
 * exited 0; app containers start once all of them have. A container that
 * exited is restarted (as a new instance, attempt + 1) when the pod's
 * restartPolicy says so, after the kubelet's back-off.
 */

export type ContainerStep =
  /** Waits for the init containers before it. */
  | { kind: 'blocked' }
  /** Its next instance is due (the first, or a restart): created once its image is there. */
  | { kind: 'create'; attempt: number; dueSince: number }
  /** Its newest instance was created but not started. */
  | { kind: 'start'; instance: Instance }
  | { kind: 'running'; instance: Instance }
  /** Exited; restarted at `until`. */
  | { kind: 'backoff'; instance: Instance; until: number; delayMs: number }
  /** Exited for good (an init container that succeeded, or the restartPolicy says no). */
  | { kind: 'done'; instance: Instance };

export interface ContainerView {
  role: 'init' | 'app';
  plan: ContainerPlan;
  /** The instance before the newest, for lastState (and `previous` logs). */
  previous?: Instance;
  restartCount: number;
  step: ContainerStep;
}

export interface PodProgress {
  initContainers: ContainerView[];
  containers: ContainerView[];
  /** An init container failed and the pod never restarts: nothing more will run. */
  initFailed: boolean;
  /** Every init container exited 0. */
  initialized: boolean;
  /** Old instances to remove: all but the newest two of each container. */
  garbage: Instance[];
}

export function podProgress(pod: ObservedPod, plan: PodPlan, now: number): PodProgress {
  const initContainers: ContainerView[] = [];
  let blocked = false;
  let initFailed = false;
  for (const container of plan.initContainers) {
    const view = containerView(pod, plan, container, 'init', blocked, now);
    initContainers.push(view);
    const step = view.step;
    const succeeded = step.kind === 'done' && step.instance.exitCode === 0;
    if (step.kind === 'done' && !succeeded) initFailed = true;
    if (!succeeded) blocked = true;
  }
  const initialized = !blocked;
  const containers = plan.containers.map((c) => containerView(pod, plan, c, 'app', !initialized, now));
  return {
    initContainers,
    containers,
    initFailed,
    initialized,
    garbage: garbage(pod, [...initContainers, ...containers]),
  };
}

/**
 * Instances no status or log needs: all but the newest two of a container
 * (the current one and the previous one, for lastState and `previous` logs),
 * or all but the newest one when a new instance is about to replace it.
 */
function garbage(pod: ObservedPod, views: readonly ContainerView[]): Instance[] {
  return views.flatMap((v) => instancesOf(pod, v.role, v.plan.name).slice(v.step.kind === 'create' ? 1 : 2));
}

function containerView(
  pod: ObservedPod,
  plan: PodPlan,
  container: ContainerPlan,
  role: 'init' | 'app',
  blocked: boolean,
  now: number,
): ContainerView {
  const [latest, previous] = instancesOf(pod, role, container.name);
  const base = {
    role,
    plan: container,
    ...(previous ? { previous } : {}),
    restartCount: latest?.attempt ?? 0,
  };
  if (!latest) {
    const dueSince = pod.infra?.createdAt ?? now;
    return { ...base, step: blocked ? { kind: 'blocked' } : { kind: 'create', attempt: 0, dueSince } };
  }
  if (latest.state === 'created') return { ...base, step: { kind: 'start', instance: latest } };
  if (latest.state === 'running') return { ...base, step: { kind: 'running', instance: latest } };
  const exitCode = latest.exitCode ?? 0;
  // An init container that succeeded is done whatever the policy.
  const restart = !(role === 'init' && exitCode === 0) && restarts(plan.restartPolicy, exitCode);
  if (!restart) return { ...base, step: { kind: 'done', instance: latest } };
  const finishedAt = latest.finishedAt ?? latest.createdAt;
  const ranMs = latest.startedAt !== undefined ? finishedAt - latest.startedAt : 0;
  const delayMs = restartDelayMs(latest.attempt, ranMs);
  const until = finishedAt + delayMs;
  if (now < until) return { ...base, step: { kind: 'backoff', instance: latest, until, delayMs } };
  return { ...base, step: { kind: 'create', attempt: latest.attempt + 1, dueSince: finishedAt } };
}

/** The kubelet's ShouldContainerBeRestarted for an exited container. */
function restarts(policy: RestartPolicy, exitCode: number): boolean {
  if (policy === 'Always') return true;
  if (policy === 'OnFailure') return exitCode !== 0;
  return false;
}

/** Every view, init containers first. */
export function allViews(progress: PodProgress): ContainerView[] {
  return [...progress.initContainers, ...progress.containers];
}
