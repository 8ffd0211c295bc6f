import { createHash } from 'node:crypto';
import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import type { MockPodPlan } from './mock-pod-plan.ts';

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
}

/** What the status of one pod is computed from. */
export interface MockPodState {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  restartPolicy: string;
  containers: readonly MockContainer[];
  plan: MockPodPlan;
  /** Epoch milliseconds when the provider created (started) this pod. */
  createdAt: number;
}

/** Where a pod is in its life at `now`; times in epoch milliseconds. */
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
  const at = mockPodStage(state, now);
  const created = seconds(state.createdAt);
  const podIp = mockPodIp(state.uid);
  const ready = at.stage === 'running';
  const since = seconds(
    at.stage === 'starting' ? state.createdAt : at.stage === 'running' ? at.startedAt : at.finishedAt,
  );
  const notReadyReason = at.stage === 'finished' ? 'PodCompleted' : 'ContainersNotReady';
  const notReadyMessage =
    at.stage === 'finished'
      ? undefined
      : `containers with unready status: [${state.containers.map((c) => c.name).join(' ')}]`;
  const readiness = (type: string): V1PodCondition =>
    ready
      ? { type, status: 'True', lastTransitionTime: since }
      : {
          type,
          status: 'False',
          reason: notReadyReason,
          ...(notReadyMessage ? { message: notReadyMessage } : {}),
          lastTransitionTime: since,
        };
  return {
    phase:
      at.stage === 'starting'
        ? 'Pending'
        : at.stage === 'running'
          ? 'Running'
          : at.exitCode === 0
            ? 'Succeeded'
            : 'Failed',
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: created },
      { type: 'Initialized', status: 'True', lastTransitionTime: created },
      readiness('ContainersReady'),
      readiness('Ready'),
    ],
    hostIP: hostIp,
    hostIPs: [{ ip: hostIp }],
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: created,
    containerStatuses: state.containers.map((c) => containerStatus(state.uid, c, at)),
  };
}

/**
 * The pod as the mock runs it: identity, the spec fields the mock keeps (node,
 * restartPolicy, container names and images) and the status at `now`.
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
    },
    status: mockPodStatus(state, now, hostIp),
  };
}

function containerStatus(uid: string, container: MockContainer, at: MockPodStage): V1ContainerStatus {
  const base = { name: container.name, image: container.image, restartCount: 0 };
  if (at.stage === 'starting') {
    return {
      ...base,
      imageID: '',
      ready: false,
      started: false,
      state: { waiting: { reason: 'ContainerCreating' } },
    };
  }
  const ids = { imageID: `mock://${container.image}`, containerID: `mock://${uid}/${container.name}` };
  if (at.stage === 'running') {
    return {
      ...base,
      ...ids,
      ready: true,
      started: true,
      state: { running: { startedAt: seconds(at.startedAt) } },
    };
  }
  return {
    ...base,
    ...ids,
    ready: false,
    started: false,
    state: {
      terminated: {
        exitCode: at.exitCode,
        reason: at.exitCode === 0 ? 'Completed' : 'Error',
        startedAt: seconds(at.startedAt),
        finishedAt: seconds(at.finishedAt),
        containerID: ids.containerID,
      },
    },
  };
}

// The API server stores times in whole seconds; so do we, or every status
// would differ from the one read back.
function seconds(epochMs: number): Date {
  return new Date(Math.floor(epochMs / 1000) * 1000);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
