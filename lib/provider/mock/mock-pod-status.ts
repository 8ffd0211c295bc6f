import { createHash } from 'node:crypto';
import type { V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import type { MockRun } from './mock-command.ts';
import {
  appPhase,
  type MockContainerView,
  mockContainerStatus,
  seconds,
  stateSince,
} from './mock-container-status.ts';
import type { MockPodPlan } from './mock-pod-plan.ts';
import type { MockProbes } from './mock-probes.ts';
import {
  type MockBehaviour,
  type MockInitAt,
  mockContainerAt,
  mockInitAt,
  restartPolicyOf,
} from './mock-timeline.ts';

/**
 * The mock's pod statuses, computed from what it stored at create time and
 * the clock: Lambda has no background timers to move a pod along, so a pod's
 * whole life is a pure function of (state, now). The same inputs always give
 * the same status, timestamps included, so a status poller sees a change only
 * when the pod really moved on.
 */

export interface MockContainer {
  name: string;
  image: string;
  /**
   * What its command does (mock-command.ts). Absent: the container runs
   * until stopped, or as the pod's annotations plan; an init container
   * without one succeeds at once.
   */
  run?: MockRun;
  /** Its probes and hooks, with what they answer (mock-probes.ts). */
  probes?: MockProbes;
}

/** What the status of one pod is computed from. */
export interface MockPodState {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  restartPolicy: string;
  containers: readonly MockContainer[];
  /** Run one after another, each to exit code 0, before the containers start. */
  initContainers?: readonly MockContainer[];
  plan: MockPodPlan;
  /** Epoch milliseconds when the provider created (started) this pod. */
  createdAt: number;
}

/**
 * Where a pod is in its life at `now` according to its annotations' plan
 * alone (commands, init containers and restarts are in {@link mockPodStatus});
 * times in epoch milliseconds.
 */
export type MockPodStage =
  | { stage: 'starting'; startsAt: number }
  | { stage: 'running'; startedAt: number }
  | { stage: 'finished'; startedAt: number; finishedAt: number; exitCode: number };

export function mockPodStage(state: MockPodState, now: number): MockPodStage {
  // A clock behind createdAt (another invocation's) must not send a pod back to Pending.
  const elapsed = Math.max(0, now - state.createdAt);
  const startDelay = state.plan.startDelaySeconds * 1000;
  const startedAt = state.createdAt + startDelay;
  if (elapsed < startDelay) return { stage: 'starting', startsAt: startedAt };
  const finishAfter = state.plan.finishAfterSeconds;
  if (finishAfter !== undefined && elapsed >= startDelay + finishAfter * 1000) {
    return {
      stage: 'finished',
      startedAt,
      finishedAt: startedAt + finishAfter * 1000,
      exitCode: state.plan.exitCode,
    };
  }
  return { stage: 'running', startedAt };
}

/** A pod IP in 10.0.0.0/8 derived from the uid: stable across calls, though two pods may share one. */
export function mockPodIp(uid: string): string {
  const [a = 0, b = 0, c = 0] = digest(`pod-ip:${uid}`);
  return `10.${a}.${b}.${(c % 254) + 1}`;
}

/** A host IP in 172.16.0.0/12 derived from the node name, for nodes without a configured one. */
export function mockHostIp(nodeName: string): string {
  const [a = 0, b = 0, c = 0] = digest(`host-ip:${nodeName}`);
  return `172.${16 + (a % 16)}.${b}.${(c % 254) + 1}`;
}

/** The status of the pod at `now`. */
export function mockPodStatus(state: MockPodState, now: number, hostIp: string): V1PodStatus {
  // A clock behind createdAt (another invocation's) must not send a pod back to Pending.
  const t = Math.max(now, state.createdAt);
  const created = seconds(state.createdAt);
  const podIp = mockPodIp(state.uid);
  const { init, apps, phase } = containersAt(state, t);
  const initialised = init.doneAt !== undefined;
  const inits = state.initContainers ?? [];
  const statuses = apps.map((a) => mockContainerStatus(state.uid, a, false, t));
  const unready = apps.filter((_, i) => !statuses[i]?.ready);
  const finished = phase === 'Succeeded' || phase === 'Failed';
  const since = seconds(Math.max(...apps.map((a) => stateSince(a.at, state.createdAt, t))));
  const readiness = (type: string): V1PodCondition =>
    unready.length === 0
      ? { type, status: 'True', lastTransitionTime: since }
      : {
          type,
          status: 'False',
          reason: finished ? 'PodCompleted' : 'ContainersNotReady',
          ...(finished
            ? {}
            : { message: `containers with unready status: [${unready.map((a) => a.name).join(' ')}]` }),
          lastTransitionTime: since,
        };
  const incomplete = inits.filter((_, i) => {
    const s = init.containers[i]?.state;
    return !(s?.kind === 'terminated' && s.termination.exitCode === 0);
  });
  const initialized: V1PodCondition =
    initialised || inits.length === 0
      ? { type: 'Initialized', status: 'True', lastTransitionTime: seconds(init.doneAt ?? state.createdAt) }
      : {
          type: 'Initialized',
          status: 'False',
          reason: 'ContainersNotInitialized',
          message: `containers with incomplete status: [${incomplete.map((c) => c.name).join(' ')}]`,
          lastTransitionTime: created,
        };
  return {
    phase,
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: created },
      initialized,
      readiness('ContainersReady'),
      readiness('Ready'),
    ],
    hostIP: hostIp,
    hostIPs: [{ ip: hostIp }],
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: created,
    ...(inits.length > 0
      ? {
          initContainerStatuses: inits.map((c, i) =>
            mockContainerStatus(
              state.uid,
              {
                name: c.name,
                image: c.image,
                at: init.containers[i],
                waitingReason: i === 0 && t < startOf(state) ? 'ContainerCreating' : 'PodInitializing',
              },
              true,
              t,
            ),
          ),
        }
      : {}),
    containerStatuses: statuses,
  };
}

/** When the first container starts: after the planned start delay. */
function startOf(state: MockPodState): number {
  return state.createdAt + state.plan.startDelaySeconds * 1000;
}

/**
 * Where every container stands at `t`, and the pod's phase. A planned
 * finish (the finish-after annotation) ends every app container, whatever
 * its command, and is never restarted; otherwise a container with a
 * modelled command follows it and the pod's restartPolicy, and one without
 * runs until stopped.
 */
export function containersAt(
  state: MockPodState,
  t: number,
): { init: MockInitAt; apps: MockContainerView[]; phase: string } {
  const policy = restartPolicyOf(state.restartPolicy);
  const startAt = startOf(state);
  const inits = state.initContainers ?? [];
  const init: MockInitAt =
    t < startAt
      ? { containers: inits.map(() => undefined), failed: false }
      : mockInitAt(
          inits.map((c) => ({ name: c.name, behaviour: c.run ?? { seconds: 0, exitCode: 0 } })),
          policy,
          startAt,
          t,
        );
  const planned: MockBehaviour = {
    ...(state.plan.finishAfterSeconds !== undefined ? { seconds: state.plan.finishAfterSeconds } : {}),
    exitCode: state.plan.exitCode,
  };
  const byCommand = (c: MockContainer) => state.plan.finishAfterSeconds === undefined && c.run !== undefined;
  const apps: MockContainerView[] = state.containers.map((c) => ({
    name: c.name,
    image: c.image,
    at:
      init.doneAt === undefined
        ? undefined
        : byCommand(c) && c.run
          ? mockContainerAt({ ...c.run, ...probesOf(c) }, policy, init.doneAt, t, c.name)
          : mockContainerAt(
              { ...planned, ...probesOf(c) },
              probesOf(c).probes ? policy : 'Never',
              init.doneAt,
              t,
              c.name,
            ),
    waitingReason: inits.length > 0 ? 'PodInitializing' : 'ContainerCreating',
    ...(c.run ? { run: c.run } : {}),
  }));
  const anyModelled = state.containers.some((c) => byCommand(c) || c.probes !== undefined);
  const phase =
    t < startAt
      ? 'Pending'
      : init.failed
        ? 'Failed'
        : init.doneAt === undefined
          ? 'Pending'
          : appPhase(
              apps.map((a) => a.at),
              anyModelled ? policy : 'Never',
            );
  return { init, apps, phase };
}

function probesOf(c: MockContainer): { probes?: MockProbes } {
  return c.probes ? { probes: c.probes } : {};
}

/**
 * The pod as the mock runs it: identity, the spec fields the mock keeps (node,
 * restartPolicy, init and app container names and images) and the status at `now`.
 */
export function mockPodObject(state: MockPodState, now: number, hostIp: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: state.namespace, name: state.name, uid: state.uid },
    spec: {
      nodeName: state.node,
      restartPolicy: state.restartPolicy,
      containers: state.containers.map((c) => ({ name: c.name, image: c.image })),
      ...(state.initContainers?.length
        ? { initContainers: state.initContainers.map((c) => ({ name: c.name, image: c.image })) }
        : {}),
    },
    status: mockPodStatus(state, now, hostIp),
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
