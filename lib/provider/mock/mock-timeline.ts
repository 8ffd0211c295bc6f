import { type MockProbeRun, type MockProbes, mockProbeRun } from './mock-probes.ts';

/**
 * The life of a mock container as a pure function of time: it runs for its
 * run's seconds, exits with its exit code, and under a restart policy that
 * asks for it is started again after the kubelet's back-off (at once the
 * first time, then 10 s doubling up to 5 minutes, pkg/kubelet's
 * backOffPeriod and MaxContainerBackOff), waiting in CrashLoopBackOff
 * meanwhile. Init containers run one after another and must each exit 0
 * before the next (and then the app containers) start.
 */

/** One finished run of a container; times in epoch ms. */
export interface MockTermination {
  exitCode: number;
  startedAt: number;
  finishedAt: number;
  /** It was killed: a liveness or startup probe failed, or its postStart hook. */
  killed?: 'liveness' | 'startup' | 'postStart';
}

export type MockContainerState =
  | { kind: 'waiting'; reason: string; message?: string; since: number }
  | { kind: 'running'; startedAt: number; probes?: MockProbeRun }
  | { kind: 'terminated'; termination: MockTermination };

/** Where one container stands at a moment. */
export interface MockContainerAt {
  state: MockContainerState;
  /** The run before the current one, once it was restarted. */
  last?: MockTermination;
  restartCount: number;
}

/** How a container behaves: absent seconds means it runs until stopped. */
export interface MockBehaviour {
  seconds?: number;
  exitCode: number;
  /** Its probes and hooks, which may kill a run before it ends by itself (mock-probes.ts). */
  probes?: MockProbes;
}

/** The exit code of a run the kubelet killed after a failed probe or hook (SIGKILL, 128 + 9). */
export const KILLED_EXIT_CODE = 137;

export type MockRestartPolicy = 'Always' | 'OnFailure' | 'Never';

export function restartPolicyOf(value: string): MockRestartPolicy {
  return value === 'Never' || value === 'OnFailure' ? value : 'Always';
}

const BACKOFF_START_MS = 10_000;
const BACKOFF_MAX_MS = 300_000;

/** The wait before restart number `n` (1 for the first restart). */
export function restartBackoffMs(n: number): number {
  return n <= 1 ? 0 : Math.min(BACKOFF_START_MS * 2 ** (n - 2), BACKOFF_MAX_MS);
}

/**
 * Where a container first started at `startAt` stands at `now`.
 * `name` only words the back-off message.
 */
export function mockContainerAt(
  behaviour: MockBehaviour,
  policy: MockRestartPolicy,
  startAt: number,
  now: number,
  name: string,
): MockContainerAt {
  const runMs = behaviour.seconds === undefined ? undefined : behaviour.seconds * 1000;
  let start = startAt;
  let restarts = 0;
  let last: MockTermination | undefined;
  for (;;) {
    const at = last === undefined ? {} : { last };
    const probes = behaviour.probes ? mockProbeRun(behaviour.probes, start) : undefined;
    const killAt = probes?.kill?.at;
    const ends = runMs === undefined ? killAt : Math.min(start + runMs, killAt ?? Number.POSITIVE_INFINITY);
    if (ends === undefined || now < ends) {
      return {
        state: { kind: 'running', startedAt: start, ...(probes ? { probes } : {}) },
        ...at,
        restartCount: restarts,
      };
    }
    const killed = killAt !== undefined && ends === killAt ? probes?.kill?.reason : undefined;
    const termination: MockTermination = killed
      ? { exitCode: KILLED_EXIT_CODE, startedAt: start, finishedAt: ends, killed }
      : { exitCode: behaviour.exitCode, startedAt: start, finishedAt: ends };
    const again = policy === 'Always' || (policy === 'OnFailure' && termination.exitCode !== 0);
    if (!again) return { state: { kind: 'terminated', termination }, ...at, restartCount: restarts };
    const delay = restartBackoffMs(restarts + 1);
    if (now < termination.finishedAt + delay) {
      return {
        state: {
          kind: 'waiting',
          reason: 'CrashLoopBackOff',
          message: `back-off ${delay / 1000}s restarting failed container=${name}`,
          since: termination.finishedAt,
        },
        last: termination,
        restartCount: restarts,
      };
    }
    start = termination.finishedAt + delay;
    restarts++;
    last = termination;
  }
}

/** Where the init containers stand at a moment: each one's state, and when (whether) all of them succeeded. */
export interface MockInitAt {
  containers: (MockContainerAt | undefined)[];
  /** When the last init container exited 0; undefined while initialising or after a failure. */
  doneAt?: number;
  /** An init container failed and will not be restarted (restartPolicy Never): the pod failed. */
  failed: boolean;
}

/**
 * Runs the init containers in order from `startAt`. A failing one is
 * restarted with back-off unless the pod's restartPolicy is Never; the ones
 * after it stay undefined (not started).
 */
export function mockInitAt(
  behaviours: readonly { name: string; behaviour: MockBehaviour }[],
  podPolicy: MockRestartPolicy,
  startAt: number,
  now: number,
): MockInitAt {
  const policy: MockRestartPolicy = podPolicy === 'Never' ? 'Never' : 'OnFailure';
  const containers: (MockContainerAt | undefined)[] = behaviours.map(() => undefined);
  let at = startAt;
  for (const [i, { name, behaviour }] of behaviours.entries()) {
    const current = mockContainerAt(behaviour, policy, at, now, name);
    containers[i] = current;
    const { state } = current;
    if (state.kind !== 'terminated') return { containers, failed: false };
    if (state.termination.exitCode !== 0) return { containers, failed: true };
    at = state.termination.finishedAt;
  }
  return { containers, doneAt: at, failed: false };
}
