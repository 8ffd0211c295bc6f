import type { V1Container } from '@kubernetes/client-node';
import { containerProbes } from '../container-probes.ts';
import {
  initialProbeState,
  type ProbeKind,
  type ProbeTiming,
  type ProbeWorkerState,
  recordProbe,
} from '../probe-worker.ts';

/**
 * Probes and lifecycle hooks in the mock: nothing runs, so what a probe
 * would answer comes from the pod's annotations, as its exits do, and the
 * kubelet's worker (probe-worker.ts) turns those answers into results, kills
 * and readiness exactly as it does on the Docker provider's prober. A whole
 * run of a container is a pure function of its start: where its postStart
 * hook ends, when its startup probe passes, when liveness or startup kills
 * it, and when it turns ready or unready.
 *
 * Annotations (`<container>` is the container's name):
 *
 * - `mock.serverless-virtual-kubelet.io/probe.<container>.<readiness|liveness|startup>`:
 *   what that probe answers, counted from the container's start: `pass`
 *   (the default), `fail`, `pass-after=N` (fails for N seconds, then
 *   passes) or `fail-after=N`; a probe the container does not have is
 *   ignored.
 * - `mock.serverless-virtual-kubelet.io/hook.<container>.post-start`:
 *   `seconds=N` (the hook runs N seconds; 0 by default) or `fail` (it
 *   fails at once: the container is killed).
 * - `mock.serverless-virtual-kubelet.io/hook.<container>.pre-stop`:
 *   `seconds=N`: on a graceful delete the hook runs N seconds (within the
 *   grace period) before the container gets SIGTERM.
 */

const PREFIX = 'mock.serverless-virtual-kubelet.io/';

/** What a probe answers over a run: `from` until `switchAfterSeconds` (if any), the other answer after. */
export interface MockAnswers {
  from: 'success' | 'failure';
  switchAfterSeconds?: number;
}

export interface MockProbe extends ProbeTiming {
  answers: MockAnswers;
}

/** A container's probes and hooks as the mock stores them. */
export interface MockProbes {
  readiness?: MockProbe;
  liveness?: MockProbe;
  startup?: MockProbe;
  /** Seconds its postStart hook runs; absent without one. */
  postStartSeconds?: number;
  postStartFails?: boolean;
  /** Seconds its preStop hook runs; absent without one. */
  preStopSeconds?: number;
}

/**
 * The probes and hooks of `c` with the answers its pod's annotations give.
 * @throws Error naming the annotation when a value cannot be read.
 */
export function mockProbes(
  c: V1Container,
  annotations: Readonly<Record<string, string>> = {},
): MockProbes | undefined {
  const spec = containerProbes(c);
  const out: MockProbes = {};
  for (const kind of ['readiness', 'liveness', 'startup'] as const) {
    const probe = spec[kind];
    if (!probe) continue;
    const { action: _action, ...timing } = probe;
    out[kind] = { ...timing, answers: answers(annotations, `${PREFIX}probe.${c.name}.${kind}`) };
  }
  if (spec.postStart) {
    const key = `${PREFIX}hook.${c.name}.post-start`;
    const value = annotations[key]?.trim();
    if (value === 'fail') Object.assign(out, { postStartSeconds: 0, postStartFails: true });
    else out.postStartSeconds = hookSeconds(key, value);
  }
  if (spec.preStop)
    out.preStopSeconds = hookSeconds(
      `${PREFIX}hook.${c.name}.pre-stop`,
      annotations[`${PREFIX}hook.${c.name}.pre-stop`]?.trim(),
    );
  return Object.keys(out).length > 0 ? out : undefined;
}

function answers(annotations: Readonly<Record<string, string>>, key: string): MockAnswers {
  const value = annotations[key]?.trim();
  if (value === undefined || value === 'pass') return { from: 'success' };
  if (value === 'fail') return { from: 'failure' };
  const match = /^(pass|fail)-after=(\d+(?:\.\d+)?)$/.exec(value);
  if (!match)
    throw new Error(
      `annotation ${key}: ${JSON.stringify(value)} is not pass, fail, pass-after=N or fail-after=N (seconds)`,
    );
  return { from: match[1] === 'pass' ? 'failure' : 'success', switchAfterSeconds: Number(match[2]) };
}

function hookSeconds(key: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const match = /^seconds=(\d+(?:\.\d+)?)$/.exec(value);
  if (!match) throw new Error(`annotation ${key}: ${JSON.stringify(value)} is not seconds=N`);
  return Number(match[1]);
}

/** A change of readiness during a run. */
export interface MockReadiness {
  at: number;
  ready: boolean;
}

/** One run of a container with probes, from its start (epoch ms). */
export interface MockProbeRun {
  /** When its postStart hook returned: before that it is not reported running. */
  postStartUntil: number;
  /** When its startup probe passed (its start, without one); undefined while it never does. */
  startedAt?: number;
  /** When liveness, startup or a failed postStart hook kills it, and why (the kubelet's Killing message). */
  kill?: { at: number; reason: 'liveness' | 'startup' | 'postStart' };
  /** Its readiness over the run, oldest first. */
  readiness: MockReadiness[];
  /** Probe failures that would each be an Unhealthy event, by kind: the first and the last. */
  failures: Partial<Record<ProbeKind, { first: number; last: number }>>;
}

/** Probe answers the mock follows past their last change before it takes the result as steady. */
const MAX_TICKS = 10_000;

/** The run of a container with `probes` started at `start`. */
export function mockProbeRun(probes: MockProbes, start: number): MockProbeRun {
  const postStartUntil = start + (probes.postStartSeconds ?? 0) * 1000;
  const failures: MockProbeRun['failures'] = {};
  if (probes.postStartFails)
    return {
      postStartUntil,
      kill: { at: postStartUntil, reason: 'postStart' },
      readiness: [],
      failures,
    };
  const startup = probes.startup
    ? simulate('startup', probes.startup, start, postStartUntil, Number.POSITIVE_INFINITY, failures)
    : undefined;
  const startedAt = probes.startup ? startup?.passedAt : postStartUntil;
  const until = startup?.killAt ?? Number.POSITIVE_INFINITY;
  const liveness =
    probes.liveness && startedAt !== undefined
      ? simulate('liveness', probes.liveness, start, startedAt, until, failures)
      : undefined;
  const killAt = Math.min(startup?.killAt ?? Infinity, liveness?.killAt ?? Infinity);
  const kill = Number.isFinite(killAt)
    ? {
        at: killAt,
        reason: startup?.killAt === killAt ? ('startup' as const) : ('liveness' as const),
      }
    : undefined;
  let readiness: MockReadiness[] = [];
  if (startedAt !== undefined && startedAt < killAt) {
    readiness = probes.readiness
      ? (simulate('readiness', probes.readiness, start, startedAt, killAt, failures).changes ?? [])
      : [{ at: startedAt, ready: true }];
  }
  return {
    postStartUntil,
    ...(startedAt !== undefined ? { startedAt } : {}),
    ...(kill ? { kill } : {}),
    readiness,
    failures,
  };
}

/**
 * The worker of one probe over a run: ticks every period from `from` (the
 * first at once), skipping those within the initial delay of `start`, until
 * `until` or a kill, and past the answers' last change only until the
 * result is steady.
 */
function simulate(
  kind: ProbeKind,
  probe: MockProbe,
  start: number,
  from: number,
  until: number,
  failures: MockProbeRun['failures'],
): { passedAt?: number; killAt?: number; changes?: MockReadiness[] } {
  let state: ProbeWorkerState = initialProbeState(kind, from);
  const changes: MockReadiness[] = [];
  const period = probe.periodSeconds * 1000;
  const switchAt =
    probe.answers.switchAfterSeconds !== undefined ? start + probe.answers.switchAfterSeconds * 1000 : start;
  const steadyAfter = switchAt + (Math.max(probe.successThreshold, probe.failureThreshold) + 1) * period;
  for (let i = 0, t = from; i < MAX_TICKS && t < until; i++, t += period) {
    if (Math.floor((t - start) / 1000) < probe.initialDelaySeconds) continue;
    const switched = probe.answers.switchAfterSeconds !== undefined && t >= switchAt;
    const answer = switched === (probe.answers.from === 'success') ? 'failure' : 'success';
    if (answer === 'failure') {
      const seen = failures[kind];
      failures[kind] = { first: seen?.first ?? t, last: t };
    }
    const step = recordProbe(kind, state, probe, answer, t);
    state = step.state;
    if (kind === 'readiness' && step.changed) changes.push({ at: t, ready: state.result === 'success' });
    if (step.kill) return { killAt: t };
    if (kind === 'startup' && state.result === 'success') return { passedAt: t };
    if (
      t >= steadyAfter &&
      !step.changed &&
      state.run >= Math.max(probe.successThreshold, probe.failureThreshold)
    )
      break;
  }
  return kind === 'readiness' ? { changes } : {};
}

/** Whether the run is ready at `now`, and since when. */
export function mockReadyAt(run: MockProbeRun, now: number): { ready: boolean; since?: number } {
  let current: MockReadiness | undefined;
  for (const change of run.readiness) if (change.at <= now) current = change;
  return current ? { ready: current.ready, since: current.at } : { ready: false };
}
