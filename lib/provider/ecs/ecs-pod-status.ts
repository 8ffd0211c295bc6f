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
import { type RestartPlan, restartPlan } from './ecs-pod-progress.ts';
import type { ContainerRef, EcsPodRecord, TaskRecord } from './ecs-pod-record.ts';
import { type ContainerSnapshot, containerRan, isStopped } from './task-snapshot.ts';

/**
 * A pod's status from what ECS said of its tasks, as the kubelet would
 * report it (pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses and
 * getPhase). Pure: the same record at the same time gives the same status,
 * timestamps included (whole seconds, as the API server stores them), so
 * pod-status writes only real changes.
 *
 * A task's containers live and restart together: restartCount is the pod's
 * (how many tasks followed a stopped one), and lastState comes from the
 * previous task.
 */

type Role = 'init' | 'app';

interface StatusContext {
  record: EcsPodRecord;
  task: TaskRecord;
  byName: ReadonlyMap<string, ContainerSnapshot>;
  previous: ReadonlyMap<string, ContainerSnapshot>;
  restart: RestartPlan | undefined;
  /** An init container failed (or never ran) in the current task. */
  initBlocked: boolean;
}

export function ecsPodStatus(record: EcsPodRecord, hostIp?: string): V1PodStatus {
  const task = record.current;
  const byName = new Map((task.snapshot?.containers ?? []).map((c) => [c.name, c]));
  const previous = new Map((record.previous?.snapshot?.containers ?? []).map((c) => [c.name, c]));
  const initBlocked = record.initContainers.some((c) => {
    const s = byName.get(c.name);
    return s?.lastStatus === 'STOPPED' && (s.exitCode !== 0 || !containerRan(s));
  });
  const ctx: StatusContext = { record, task, byName, previous, restart: restartPlan(record), initBlocked };
  const initContainerStatuses = record.initContainers.map((c, i) => containerStatus(ctx, c, 'init', i));
  const containerStatuses = record.containers.map((c, i) => containerStatus(ctx, c, 'app', i));
  const initFailed = initBlocked && isStopped(task.snapshot) && !ctx.restart;
  const failedLaunch = task.launchFailure !== undefined && record.restartPolicy === 'Never';
  const phase = failedLaunch
    ? 'Failed'
    : kubeletPodPhase(record.restartPolicy, initContainerStatuses, containerStatuses, initFailed);
  const podIp = task.snapshot?.podIp ?? record.previous?.snapshot?.podIp;
  return {
    phase,
    conditions: conditions(record, initContainerStatuses, containerStatuses, phase),
    ...(hostIp ? { hostIP: hostIp, hostIPs: [{ ip: hostIp }] } : {}),
    ...(podIp ? { podIP: podIp, podIPs: [{ ip: podIp }] } : {}),
    startTime: seconds(record.createdAt),
    ...(initContainerStatuses.length > 0 ? { initContainerStatuses } : {}),
    containerStatuses,
  };
}

/** The pod object getPod and listPods return: identity, binding, the spec essentials and the status. */
export function ecsPodObject(record: EcsPodRecord, hostIp?: string): V1Pod {
  const refs = (list: ContainerRef[]) => list.map((c) => ({ name: c.name, image: c.image }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: record.namespace, name: record.name, uid: record.uid },
    spec: {
      nodeName: record.node,
      restartPolicy: record.restartPolicy,
      terminationGracePeriodSeconds: record.gracePeriodSeconds,
      ...(record.initContainers.length > 0 ? { initContainers: refs(record.initContainers) } : {}),
      containers: refs(record.containers),
    },
    status: ecsPodStatus(record, hostIp),
  };
}

function containerStatus(
  ctx: StatusContext,
  ref: ContainerRef,
  role: Role,
  index: number,
): V1ContainerStatus {
  const snap = ctx.byName.get(ref.name);
  const last = ctx.previous.get(ref.name);
  const lastState =
    last?.lastStatus === 'STOPPED' ? { terminated: terminated(ctx, last, ctx.record.previous) } : {};
  const state = containerState(ctx, role, index, snap);
  const running = state.running !== undefined;
  // A readiness probe is the container's health check: ready while ECS says HEALTHY (health-checks.ts);
  // an init container is ready once it exited 0, as the kubelet reports it.
  const ready =
    role === 'init'
      ? state.terminated?.exitCode === 0
      : running && (!ref.health?.readiness || snap?.healthStatus === 'HEALTHY');
  return {
    name: ref.name,
    image: ref.image,
    imageID: snap?.imageDigest ? `${ref.image.split('@')[0]}@${snap.imageDigest}` : '',
    ...(snap?.runtimeId ? { containerID: `ecs://${snap.runtimeId}` } : {}),
    ready,
    started: running,
    restartCount: ctx.record.restarts,
    state,
    lastState,
  };
}

function containerState(
  ctx: StatusContext,
  role: Role,
  index: number,
  snap: ContainerSnapshot | undefined,
): V1ContainerState {
  const { task, restart } = ctx;
  if (task.launchFailure) return { waiting: { reason: 'ProviderFailed', message: task.launchFailure } };
  if (snap?.lastStatus === 'RUNNING' && !isStopped(task.snapshot)) {
    return {
      running: { startedAt: seconds(snap.startedAt ?? task.snapshot?.startedAt ?? task.requestedAt) },
    };
  }
  const stopped = snap?.lastStatus === 'STOPPED' || isStopped(task.snapshot);
  if (!stopped) return { waiting: { reason: waitingReason(ctx, role, index) } };
  if (restart) {
    const pull = isPullFailure(snap?.reason ?? task.snapshot?.stoppedReason);
    const reason = pull ? 'ImagePullBackOff' : 'CrashLoopBackOff';
    const message = `back-off ${Math.round(restart.delayMs / 1000)}s restarting failed pod=${ctx.record.name}_${ctx.record.namespace}(${ctx.record.uid})`;
    return { waiting: { reason, message } };
  }
  const ran = (snap !== undefined && containerRan(snap)) || snap?.startedAt !== undefined;
  if (!ran && role === 'app' && ctx.initBlocked) return { waiting: { reason: 'PodInitializing' } };
  if (!ran && role === 'init' && ctx.initBlocked && !blocksAt(ctx, index))
    return { waiting: { reason: 'PodInitializing' } };
  return { terminated: terminated(ctx, snap, task) };
}

/** Whether the init container at `index` is the one that failed (the first not to exit 0). */
function blocksAt(ctx: StatusContext, index: number): boolean {
  const first = ctx.record.initContainers.findIndex((c) => ctx.byName.get(c.name)?.exitCode !== 0);
  return first === index;
}

/** Why a container of a task that has not reached it yet waits. */
function waitingReason(ctx: StatusContext, role: Role, index: number): string {
  const inits = ctx.record.initContainers;
  const done = (name: string | undefined) => name !== undefined && ctx.byName.get(name)?.exitCode === 0;
  if (role === 'init')
    return index === 0 || done(inits[index - 1]?.name) ? 'ContainerCreating' : 'PodInitializing';
  return inits.every((c) => done(c.name)) ? 'ContainerCreating' : 'PodInitializing';
}

function terminated(
  ctx: StatusContext,
  snap: ContainerSnapshot | undefined,
  task: TaskRecord | undefined,
): V1ContainerStateTerminated {
  const stopped = task?.snapshot;
  const finished = snap?.finishedAt ?? stopped?.stoppedAt ?? stopped?.updatedAt ?? ctx.task.requestedAt;
  const reason = snap?.reason ?? stopped?.stoppedReason;
  const exitCode = snap && containerRan(snap) ? snap.exitCode : undefined;
  const message = reason ? { message: reason } : {};
  if (exitCode === undefined) {
    return {
      exitCode: 128,
      reason: isPullFailure(reason) ? 'ErrImagePull' : 'StartError',
      ...message,
      finishedAt: seconds(finished),
    };
  }
  return {
    exitCode,
    reason: reason?.startsWith('OutOfMemoryError') ? 'OOMKilled' : exitCode === 0 ? 'Completed' : 'Error',
    ...(exitCode !== 0 ? message : {}),
    ...(snap?.startedAt !== undefined ? { startedAt: seconds(snap.startedAt) } : {}),
    finishedAt: seconds(finished),
    ...(snap?.runtimeId ? { containerID: `ecs://${snap.runtimeId}` } : {}),
  };
}

function isPullFailure(reason: string | undefined): boolean {
  return reason?.startsWith('CannotPullContainerError') === true;
}

function conditions(
  record: EcsPodRecord,
  inits: V1ContainerStatus[],
  containers: V1ContainerStatus[],
  phase: string,
): V1PodCondition[] {
  const created = seconds(record.createdAt);
  const initialized = inits.every((s) => s.state?.terminated?.exitCode === 0);
  const initDone = Math.max(
    record.createdAt,
    ...inits.map((s) => s.state?.terminated?.finishedAt?.getTime() ?? 0),
  );
  const unready = containers.filter((s) => !s.ready).map((s) => s.name);
  const ready = unready.length === 0;
  // Readiness also changes when a readiness health check's status does (first read at healthAt).
  const checked = new Map((record.current.snapshot?.containers ?? []).map((c) => [c.name, c.healthAt]));
  const since = Math.max(
    record.createdAt,
    ...containers.map(
      (s) => (s.state?.running?.startedAt ?? s.state?.terminated?.finishedAt)?.getTime() ?? 0,
    ),
    ...record.containers.map((c) => (c.health?.readiness ? (checked.get(c.name) ?? 0) : 0)),
  );
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  return [
    { type: 'PodScheduled', status: 'True', lastTransitionTime: created },
    initialized
      ? { type: 'Initialized', status: 'True', lastTransitionTime: seconds(initDone) }
      : {
          type: 'Initialized',
          status: 'False',
          reason: 'ContainersNotInitialized',
          message: `containers with incomplete status: [${inits
            .filter((s) => s.state?.terminated?.exitCode !== 0)
            .map((s) => s.name)
            .join(' ')}]`,
          lastTransitionTime: created,
        },
    ...readinessConditions({ ready, unready, terminal, since }),
  ];
}
