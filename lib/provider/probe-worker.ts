/**
 * The kubelet's probe worker (pkg/kubelet/prober/worker.go, doProbe) as a
 * pure state machine, for providers that run or simulate probes
 * themselves: the Docker provider's prober (which probes real containers)
 * and the mock (which simulates them from annotations) follow the same
 * rules, so that a probe behaves alike on every node.
 *
 * One worker per probe of a container instance. Readiness starts Failure,
 * liveness Success, startup Unknown (the results manager's initial values);
 * a probe result moves the worker's result only after `successThreshold`
 * successes or `failureThreshold` failures in a row. A liveness or startup
 * worker whose result turned Failure holds (probes no more) until the next
 * instance: the container is killed and restarted. Nothing here imports
 * anything, so that the Docker provider's prober can carry it into its
 * container.
 */

export type ProbeKind = 'readiness' | 'liveness' | 'startup';

export type ProbeResult = 'success' | 'failure' | 'unknown';

/** A probe's timing, with the API server's defaults applied (period 10, timeout 1, thresholds 1 and 3). */
export interface ProbeTiming {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

export interface ProbeWorkerState {
  /** What the results manager holds for the instance. */
  result: ProbeResult;
  /** When `result` last changed (epoch ms). */
  since: number;
  /** The last probe outcome, and how many times in a row it came. */
  last?: 'success' | 'failure';
  run: number;
  /** A liveness or startup failure was recorded: no more probes for this instance. */
  onHold: boolean;
}

/** The worker of a newly seen instance, at `at`. */
export function initialProbeState(kind: ProbeKind, at: number): ProbeWorkerState {
  const result: ProbeResult = kind === 'readiness' ? 'failure' : kind === 'liveness' ? 'success' : 'unknown';
  return { result, since: at, run: 0, onHold: false };
}

/** The container, as a worker's gates read it. */
export interface ProbedContainer {
  running: boolean;
  /** When the instance started (epoch ms). */
  startedAt: number;
  /** Its startup probe succeeded, or it has none. */
  started: boolean;
}

/**
 * Whether the worker probes at `now` (doProbe's gates): not while on hold,
 * not before `initialDelaySeconds` since the start (whole seconds, as the
 * kubelet truncates), a startup worker only until the container started,
 * the others only once it did.
 */
export function shouldProbe(
  kind: ProbeKind,
  state: ProbeWorkerState,
  timing: ProbeTiming,
  container: ProbedContainer,
  now: number,
): boolean {
  if (state.onHold || !container.running) return false;
  if (Math.floor((now - container.startedAt) / 1000) < timing.initialDelaySeconds) return false;
  return kind === 'startup' ? !container.started : container.started;
}

/** What one probe did to the worker. */
export interface ProbeStep {
  state: ProbeWorkerState;
  /** The worker's result changed. */
  changed: boolean;
  /** A liveness or startup failure: the container is to be killed (and restarted by the pod's policy). */
  kill: boolean;
}

/** Records one probe outcome at `at` (doProbe after the probe ran). */
export function recordProbe(
  kind: ProbeKind,
  state: ProbeWorkerState,
  timing: ProbeTiming,
  outcome: 'success' | 'failure',
  at: number,
): ProbeStep {
  const run = state.last === outcome ? state.run + 1 : 1;
  const counted = { ...state, last: outcome, run };
  const threshold = outcome === 'failure' ? timing.failureThreshold : timing.successThreshold;
  if (run < threshold) return { state: counted, changed: false, kill: false };
  const changed = state.result !== outcome;
  const next: ProbeWorkerState = { ...counted, result: outcome, since: changed ? at : state.since };
  if ((kind === 'liveness' || kind === 'startup') && outcome === 'failure')
    return { state: { ...next, onHold: true, run: 0 }, changed, kill: true };
  return { state: next, changed, kill: false };
}

/** What the status of a running container says of its probes (prober_manager.go, UpdatePodStatus). */
export interface ProbeStatus {
  started: boolean;
  ready: boolean;
  /** When `ready` last changed, when a readiness worker says (epoch ms). */
  readySince?: number;
  /** When `started` last changed, when a startup worker says. */
  startedSince?: number;
}

/**
 * `started`: the startup worker's result is Success, or the container has no
 * startup probe; `ready`: started, and the readiness worker's result is
 * Success, or there is no readiness probe. A probe whose worker has no
 * result yet counts as not passed. A container that does not run is
 * neither.
 */
export function probeStatus(
  running: boolean,
  probes: {
    startup?: Pick<ProbeWorkerState, 'result' | 'since'> | 'pending';
    readiness?: Pick<ProbeWorkerState, 'result' | 'since'> | 'pending';
  },
): ProbeStatus {
  if (!running) return { started: false, ready: false };
  const { startup, readiness } = probes;
  const started = startup === undefined || (startup !== 'pending' && startup.result === 'success');
  const ready =
    started && (readiness === undefined || (readiness !== 'pending' && readiness.result === 'success'));
  return {
    started,
    ready,
    ...(startup && startup !== 'pending' ? { startedSince: startup.since } : {}),
    ...(readiness && readiness !== 'pending' ? { readySince: readiness.since } : {}),
  };
}

/** The kubelet's words for a probe kind in events (probeType.String()). */
export function probeKindName(kind: ProbeKind): string {
  return kind === 'readiness' ? 'Readiness' : kind === 'liveness' ? 'Liveness' : 'Startup';
}
