import type {
  V1ContainerState,
  V1ContainerStateTerminated,
  V1ContainerStatus,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
} from '@kubernetes/client-node';
import { readinessConditions, seconds } from '../kubelet-pod-conditions.ts';
import { kubeletPodPhase } from '../kubelet-pod-phase.ts';
import type { Instance, ObservedPod } from './observed-pod.ts';
import type { PodPlan } from './pod-plan.ts';
import type { ContainerView, PodProgress } from './pod-progress.ts';
import { type InstanceProbing, instanceProbing } from './prober/probe-status.ts';
import type { ProberReport } from './prober/prober-report.ts';

/**
 * A pod's status from the engine's state, as the kubelet computes it
 * (pkg/kubelet/kubelet_pods.go: convertToAPIContainerStatuses, getPhase;
 * pkg/kubelet/status/generate.go for the conditions). Pure: the same engine
 * state gives the same status, timestamps included (whole seconds, as the
 * API server stores them), so pod-status writes only real changes.
 */

/** Where the image of a container whose next instance is due stands. */
export type ImageView =
  | { kind: 'ready' }
  | { kind: 'pulling' }
  | { kind: 'failed'; message: string; failedAt: number; retryAt: number }
  | { kind: 'never' };

/** How long after a failed pull the waiting reason says ErrImagePull before ImagePullBackOff. */
const ERR_IMAGE_PULL_MS = 5_000;

export interface StatusInput {
  pod: ObservedPod;
  plan: PodPlan;
  progress: PodProgress;
  /** The image view of each container whose step is `create`, by container name. */
  images: ReadonlyMap<string, ImageView>;
  hostIp: string;
  now: number;
  /** The node's prober report: probe results and hooks of the instances (absent: none read). */
  report?: ProberReport;
  /** Termination messages of exited instances, by instance id (termination-message.ts). */
  messages?: ReadonlyMap<string, string>;
}

export function podStatus(input: StatusInput): V1PodStatus {
  const { pod, progress, hostIp } = input;
  const initContainerStatuses = progress.initContainers.map((v) => containerStatus(v, input));
  const containerStatuses = progress.containers.map((v) => containerStatus(v, input));
  const phase = podPhase(input.plan, progress, initContainerStatuses, containerStatuses);
  const podIp = pod.infra?.ip;
  return {
    phase,
    conditions: conditions(input, containerStatuses, phase),
    hostIP: hostIp,
    hostIPs: [{ ip: hostIp }],
    ...(podIp ? { podIP: podIp, podIPs: [{ ip: podIp }] } : {}),
    ...(pod.infra ? { startTime: seconds(pod.infra.createdAt) } : {}),
    ...(initContainerStatuses.length > 0 ? { initContainerStatuses } : {}),
    containerStatuses,
  };
}

/** The pod object getPod and listPods return: identity, binding, the spec essentials and the status. */
export function podObject(plan: PodPlan, status: V1PodStatus): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: plan.namespace, name: plan.name, uid: plan.uid },
    spec: {
      nodeName: plan.node,
      restartPolicy: plan.restartPolicy,
      terminationGracePeriodSeconds: plan.gracePeriodSeconds,
      ...(plan.initContainers.length > 0
        ? { initContainers: plan.initContainers.map((c) => ({ name: c.name, image: c.image })) }
        : {}),
      containers: plan.containers.map((c) => ({ name: c.name, image: c.image })),
    },
    status,
  };
}

function containerStatus(view: ContainerView, input: StatusInput): V1ContainerStatus {
  const { step, plan, previous } = view;
  const instance = 'instance' in step ? step.instance : undefined;
  const lastTerminated =
    step.kind === 'backoff' || step.kind === 'create' ? latestExited(input, view) : previous;
  const lastState =
    lastTerminated && lastTerminated.state === 'exited'
      ? { terminated: terminated(lastTerminated, input.messages) }
      : {};
  const probing = probingOf(view, input);
  return {
    name: plan.name,
    image: plan.image,
    imageID: instance?.imageId ?? '',
    ...(instance ? { containerID: containerId(instance) } : {}),
    ready: probing?.ready ?? succeededInit(view),
    started: probing?.started ?? false,
    restartCount: view.restartCount,
    state: state(view, input),
    lastState,
  };
}

/**
 * What the prober says of a running app instance (ready, started, a postStart hook still running);
 * undefined when it does not run. Init containers have no probes or hooks.
 */
function probingOf(view: ContainerView, input: StatusInput): InstanceProbing | undefined {
  if (view.step.kind !== 'running') return undefined;
  if (view.role === 'init') return { postStartPending: false, started: true, ready: true };
  return instanceProbing(view.plan, view.step.instance.id, input.report);
}

/** The kubelet reports an init container that exited 0 ready (prober_manager.go UpdatePodStatus). */
function succeededInit(view: ContainerView): boolean {
  if (view.role !== 'init' || view.step.kind !== 'done') return false;
  return !view.step.instance.startError && (view.step.instance.exitCode ?? 0) === 0;
}

/** The newest exited instance of a container whose next instance is due or backing off. */
function latestExited(input: StatusInput, view: ContainerView): Instance | undefined {
  if (view.step.kind === 'backoff') return view.step.instance;
  return input.pod.instances.find(
    (i) =>
      i.role === view.role &&
      i.container === view.plan.name &&
      i.attempt === view.restartCount &&
      i.state === 'exited',
  );
}

function state(view: ContainerView, input: StatusInput): V1ContainerState {
  const { step, plan } = view;
  switch (step.kind) {
    case 'blocked':
      return { waiting: { reason: 'PodInitializing' } };
    case 'start':
      return { waiting: { reason: 'ContainerCreating' } };
    case 'running':
      // The kubelet reports a container whose postStart hook runs as not started yet.
      if (probingOf(view, input)?.postStartPending) return { waiting: { reason: 'ContainerCreating' } };
      return { running: { startedAt: seconds(step.instance.startedAt ?? step.instance.createdAt) } };
    case 'done':
      return { terminated: terminated(step.instance, input.messages) };
    case 'backoff':
      return {
        waiting: {
          reason: 'CrashLoopBackOff',
          message: `back-off ${Math.round(step.delayMs / 1000)}s restarting failed container=${plan.name} pod=${input.plan.name}_${input.plan.namespace}(${input.plan.uid})`,
        },
      };
    case 'create':
      return { waiting: imageWaiting(plan.image, input.images.get(plan.name), input.now) };
  }
}

function imageWaiting(
  image: string,
  view: ImageView | undefined,
  now: number,
): { reason: string; message?: string } {
  if (!view || view.kind === 'ready' || view.kind === 'pulling') return { reason: 'ContainerCreating' };
  if (view.kind === 'never')
    return {
      reason: 'ErrImageNeverPull',
      message: `Container image "${image}" is not present with pull policy of Never`,
    };
  if (now - view.failedAt < ERR_IMAGE_PULL_MS) return { reason: 'ErrImagePull', message: view.message };
  return { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` };
}

function terminated(
  instance: Instance,
  messages: ReadonlyMap<string, string> | undefined,
): V1ContainerStateTerminated {
  const message = instance.startError ?? messages?.get(instance.id);
  const exitCode = instance.exitCode ?? 0;
  const reason = instance.startError
    ? 'StartError'
    : instance.oomKilled
      ? 'OOMKilled'
      : exitCode === 0
        ? 'Completed'
        : 'Error';
  return {
    exitCode,
    reason,
    ...(message ? { message } : {}),
    ...(instance.startedAt !== undefined ? { startedAt: seconds(instance.startedAt) } : {}),
    finishedAt: seconds(instance.finishedAt ?? instance.createdAt),
    containerID: containerId(instance),
  };
}

/**
 * The kubelet's getPhase: Pending until every init container succeeded and
 * every container started once; Failed when an init container failed and the
 * pod never restarts; then Running while anything runs or will restart, and
 * Succeeded or Failed once everything exited for good.
 */
function podPhase(
  plan: PodPlan,
  progress: PodProgress,
  inits: V1ContainerStatus[],
  containers: V1ContainerStatus[],
): string {
  if (progress.initFailed) return 'Failed';
  if (!progress.initialized || inits.some((s) => s.state?.running)) return 'Pending';
  return kubeletPodPhase(plan.restartPolicy, [], containers, false);
}

function conditions(input: StatusInput, statuses: V1ContainerStatus[], phase: string): V1PodCondition[] {
  const { pod, progress } = input;
  const created = pod.infra?.createdAt ?? input.now;
  const initDone = progress.initContainers
    .map((v) => ('instance' in v.step ? v.step.instance.finishedAt : undefined))
    .filter((t): t is number => t !== undefined);
  const initialized: V1PodCondition = progress.initialized
    ? { type: 'Initialized', status: 'True', lastTransitionTime: seconds(Math.max(created, ...initDone)) }
    : {
        type: 'Initialized',
        status: 'False',
        reason: 'ContainersNotInitialized',
        message: `containers with incomplete status: [${progress.initContainers
          .filter((v) => !(v.step.kind === 'done' && v.step.instance.exitCode === 0))
          .map((v) => v.plan.name)
          .join(' ')}]`,
        lastTransitionTime: seconds(created),
      };
  const ready = statuses.length > 0 && statuses.every((s) => s.ready);
  const since = ready ? readySince(input, created) : unreadySince(input, created);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const unready = statuses.filter((s) => !s.ready).map((s) => s.name);
  return [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: seconds(created) },
    initialized,
    ...readinessConditions({ ready, unready, terminal, since }),
  ];
}

/** When the last app container became ready: its start, or its readiness probe's passing. */
function readySince(input: StatusInput, created: number): number {
  const times = input.progress.containers.flatMap((v) => {
    if (v.step.kind !== 'running') return [];
    const started = v.step.instance.startedAt ?? created;
    return [Math.max(started, probingOf(v, input)?.readySince ?? 0)];
  });
  return Math.max(created, ...times);
}

/** When the pod last stopped being ready: a container's exit, or a readiness probe failing after its start. */
function unreadySince(input: StatusInput, created: number): number {
  const exits = input.pod.instances
    .filter((i) => i.role === 'app' && i.finishedAt !== undefined)
    .map((i) => i.finishedAt ?? 0);
  const failed = input.progress.containers.flatMap((v) => {
    if (v.step.kind !== 'running') return [];
    const probing = probingOf(v, input);
    const since = probing?.readySince;
    return probing && !probing.ready && since !== undefined && since > (v.step.instance.startedAt ?? 0)
      ? [since]
      : [];
  });
  return Math.max(created, ...exits, ...failed);
}

function containerId(instance: Instance): string {
  return `docker://${instance.id}`;
}
