import type { V1ContainerState, V1ContainerStatus } from '@kubernetes/client-node';
import type { MockRun } from './mock-command.ts';
import { mockReadyAt } from './mock-probes.ts';
import type { MockContainerAt, MockRestartPolicy, MockTermination } from './mock-timeline.ts';

/**
 * Container statuses and the pod phase from where the mock's containers
 * stand (mock-timeline.ts), as the kubelet reports them
 * (pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses and getPhase).
 */

/** A container as its status is built: its name and image, and where it stands (undefined: not started yet). */
export interface MockContainerView {
  name: string;
  image: string;
  at: MockContainerAt | undefined;
  /** Why a container that has not started waits: ContainerCreating or PodInitializing. */
  waitingReason: string;
  /** What its command does, for its termination message. */
  run?: MockRun;
}

/** The API server stores times in whole seconds; so do we, or every status would differ from the one read back. */
export function seconds(epochMs: number): Date {
  return new Date(Math.floor(epochMs / 1000) * 1000);
}

/**
 * The termination message of a run: what the script wrote to the termination message path, else,
 * under FallbackToLogsOnError (the run carries its log's tail then), its log when it failed.
 */
function terminationMessage(t: MockTermination, run: MockRun | undefined): string | undefined {
  if (run?.message) return run.message;
  return t.exitCode !== 0 && run?.logTail ? run.logTail : undefined;
}

function terminatedState(t: MockTermination, containerID: string, run?: MockRun): V1ContainerState {
  const message = terminationMessage(t, run);
  return {
    terminated: {
      exitCode: t.exitCode,
      reason: t.exitCode === 0 ? 'Completed' : 'Error',
      ...(message ? { message } : {}),
      startedAt: seconds(t.startedAt),
      finishedAt: seconds(t.finishedAt),
      containerID,
    },
  };
}

/**
 * The status of one container. `init` containers are ready once they
 * exited 0; app containers while they run.
 */
export function mockContainerStatus(
  uid: string,
  view: MockContainerView,
  init: boolean,
  now: number,
): V1ContainerStatus {
  const base = { name: view.name, image: view.image, restartCount: view.at?.restartCount ?? 0 };
  const at = view.at;
  if (!at) {
    return {
      ...base,
      imageID: '',
      ready: false,
      started: false,
      state: { waiting: { reason: view.waitingReason } },
    };
  }
  const containerID = `mock://${uid}/${view.name}`;
  const ids = { imageID: `mock://${view.image}`, containerID };
  const lastState = at.last ? { lastState: terminatedState(at.last, containerID, view.run) } : {};
  const { state } = at;
  if (state.kind === 'running') {
    const probes = state.probes;
    // The kubelet reports a container whose postStart hook runs as not started yet.
    if (probes && now < probes.postStartUntil)
      return {
        ...base,
        ...ids,
        ...lastState,
        ready: false,
        started: false,
        state: { waiting: { reason: 'ContainerCreating' } },
      };
    return {
      ...base,
      ...ids,
      ...lastState,
      ready: !init && (probes ? mockReadyAt(probes, now).ready : true),
      started: probes ? probes.startedAt !== undefined && now >= probes.startedAt : true,
      state: { running: { startedAt: seconds(state.startedAt) } },
    };
  }
  if (state.kind === 'terminated') {
    return {
      ...base,
      ...ids,
      ...lastState,
      ready: init && state.termination.exitCode === 0,
      started: false,
      state: terminatedState(state.termination, containerID, view.run),
    };
  }
  return {
    ...base,
    ...ids,
    ...lastState,
    ready: false,
    started: false,
    state: { waiting: { reason: state.reason, ...(state.message ? { message: state.message } : {}) } },
  };
}

/** When the container's current state began (for the conditions' lastTransitionTime); `otherwise` when not started. */
export function stateSince(at: MockContainerAt | undefined, otherwise: number, now: number): number {
  if (!at) return otherwise;
  const { state } = at;
  if (state.kind === 'running')
    return state.probes
      ? Math.max(state.startedAt, mockReadyAt(state.probes, now).since ?? 0)
      : state.startedAt;
  if (state.kind === 'terminated') return state.termination.finishedAt;
  return state.since;
}

/** getPhase for the app containers once the pod is initialised. */
export function appPhase(
  containers: readonly (MockContainerAt | undefined)[],
  policy: MockRestartPolicy,
): string {
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const at of containers) {
    const kind = at?.state.kind;
    if (kind === 'running') running++;
    else if (kind === 'terminated') {
      stopped++;
      if (at?.state.kind === 'terminated' && at.state.termination.exitCode === 0) succeeded++;
    } else if (at?.last) stopped++;
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (policy === 'Always') return 'Running';
  if (stopped === succeeded) return 'Succeeded';
  if (policy === 'Never') return 'Failed';
  return 'Running';
}
