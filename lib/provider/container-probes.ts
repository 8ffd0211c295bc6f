import type { V1Container, V1LifecycleHandler, V1Probe } from '@kubernetes/client-node';
import { expandEnv } from '../kube/env-expansion.ts';
import type { ProbeKind, ProbeTiming } from './probe-worker.ts';

/**
 * A container's probes and lifecycle hooks, read from its spec into the
 * plain shapes the providers carry (the Docker provider's pod plan, the
 * mock's record, the ECS health check), with the API server's defaults
 * applied and its validation repeated: a pod can reach a provider without
 * the API server (a test, a tool calling the provider interface), and a
 * field the provider would misread must be an error naming it, before
 * anything is created.
 *
 * What Kubernetes v1.20 has is read; the fields of newer API servers (a
 * `grpc` probe, a probe's own `terminationGracePeriodSeconds`, the `sleep`
 * hook) are refused by name until they can be tested on a control plane
 * that has them.
 */

/** A port by number, or by the name of one of the container's ports. */
export type ProbePort = number | { name: string };

export type ProbeAction =
  | { exec: { command: string[] } }
  | {
      httpGet: {
        scheme: 'HTTP' | 'HTTPS';
        /** Empty: the pod IP. */
        host?: string;
        path: string;
        port: ProbePort;
        headers: Array<{ name: string; value: string }>;
      };
    }
  | { tcpSocket: { host?: string; port: ProbePort } };

export interface ProbeSpec extends ProbeTiming {
  action: ProbeAction;
}

/** A hook's action: what a probe can do but tcpSocket, which the kubelet never ran. */
export type HookAction = Exclude<ProbeAction, { tcpSocket: unknown }>;

export interface ContainerProbes {
  readiness?: ProbeSpec;
  liveness?: ProbeSpec;
  startup?: ProbeSpec;
  postStart?: HookAction;
  preStop?: HookAction;
}

export const PROBE_FIELDS: Readonly<Record<ProbeKind, 'readinessProbe' | 'livenessProbe' | 'startupProbe'>> =
  {
    readiness: 'readinessProbe',
    liveness: 'livenessProbe',
    startup: 'startupProbe',
  };

/** The API server's defaults (SetDefaults_Probe). */
const DEFAULT_TIMING: ProbeTiming = {
  initialDelaySeconds: 0,
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
};

/**
 * What is wrong with the probes and hooks of a container, one line per
 * field, each starting with the field's name under the container (`at`);
 * empty when they can run. `kind`: init containers may have none (the API
 * server refuses them; so does the provider).
 */
export function probeProblems(at: string, kind: 'initContainers' | 'containers', c: V1Container): string[] {
  const problems: string[] = [];
  const problem = (field: string, why: string) => problems.push(`${at}.${field}: ${why}`);
  for (const [probeKind, field] of Object.entries(PROBE_FIELDS) as Array<[ProbeKind, string]>) {
    const probe = c[PROBE_FIELDS[probeKind]];
    if (!probe) continue;
    if (kind === 'initContainers') {
      problem(field, 'init containers may not have probes');
      continue;
    }
    for (const [sub, why] of probeSpecProblems(probeKind, probe)) problem(`${field}${sub}`, why);
  }
  for (const hook of ['postStart', 'preStop'] as const) {
    const handler = c.lifecycle?.[hook];
    if (!handler) continue;
    if (kind === 'initContainers') {
      problem(`lifecycle.${hook}`, 'init containers may not have lifecycle hooks');
      continue;
    }
    for (const [sub, why] of hookProblems(handler)) problem(`lifecycle.${hook}${sub}`, why);
  }
  return problems;
}

type Problem = [field: string, why: string];

function probeSpecProblems(kind: ProbeKind, probe: V1Probe): Problem[] {
  const problems: Problem[] = [];
  if (probe.grpc) problems.push(['.grpc', 'grpc probes are not supported (Kubernetes 1.24+)']);
  if (probe.terminationGracePeriodSeconds !== undefined)
    problems.push([
      '.terminationGracePeriodSeconds',
      "a probe's own grace period is not supported (Kubernetes 1.21+); the pod's applies",
    ]);
  const handlers = (['exec', 'httpGet', 'tcpSocket'] as const).filter((h) => probe[h] !== undefined);
  if (handlers.length === 0 && !probe.grpc) problems.push(['', 'must specify a handler type']);
  if (handlers.length > 1)
    for (const h of handlers.slice(1)) problems.push([`.${h}`, 'may not specify more than 1 handler type']);
  if (handlers[0]) problems.push(...actionProblems(handlers[0], probe));
  for (const field of [
    'initialDelaySeconds',
    'timeoutSeconds',
    'periodSeconds',
    'successThreshold',
    'failureThreshold',
  ] as const) {
    const value = probe[field];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 0)
      problems.push([`.${field}`, `must be a whole number greater than or equal to 0, not ${value}`]);
  }
  if (kind !== 'readiness' && probe.successThreshold !== undefined && probe.successThreshold > 1)
    problems.push(['.successThreshold', 'must be 1 for liveness and startup probes']);
  return problems;
}

function hookProblems(handler: V1LifecycleHandler): Problem[] {
  const problems: Problem[] = [];
  if (handler.sleep) problems.push(['.sleep', 'sleep hooks are not supported (Kubernetes 1.29+)']);
  if (handler.tcpSocket) problems.push(['.tcpSocket', 'tcpSocket hooks are not run (as by the kubelet)']);
  const handlers = (['exec', 'httpGet'] as const).filter((h) => handler[h] !== undefined);
  if (handlers.length === 0 && !handler.sleep && !handler.tcpSocket)
    problems.push(['', 'must specify a handler type']);
  if (handlers.length > 1) problems.push(['.httpGet', 'may not specify more than 1 handler type']);
  if (handlers[0]) problems.push(...actionProblems(handlers[0], handler));
  return problems;
}

function actionProblems(
  kind: 'exec' | 'httpGet' | 'tcpSocket',
  handler: Pick<V1Probe, 'exec' | 'httpGet' | 'tcpSocket'>,
): Problem[] {
  const problems: Problem[] = [];
  if (kind === 'exec') {
    const command = handler.exec?.command;
    if (!command?.length) problems.push(['.exec.command', 'is required']);
    else if (command.some((word) => typeof word !== 'string'))
      problems.push(['.exec.command', 'must be a list of strings']);
    return problems;
  }
  if (kind === 'httpGet') {
    const get = handler.httpGet;
    if (get?.scheme !== undefined && get.scheme !== 'HTTP' && get.scheme !== 'HTTPS')
      problems.push(['.httpGet.scheme', `must be HTTP or HTTPS, not ${JSON.stringify(get.scheme)}`]);
    for (const header of get?.httpHeaders ?? []) {
      if (!/^[-A-Za-z0-9!#$%&'*+.^_`|~]+$/.test(header.name ?? ''))
        problems.push(['.httpGet.httpHeaders', `${JSON.stringify(header.name)} is not a valid header name`]);
    }
    const port = portProblem(get?.port);
    if (port) problems.push(['.httpGet.port', port]);
    return problems;
  }
  const port = portProblem(handler.tcpSocket?.port);
  if (port) problems.push(['.tcpSocket.port', port]);
  return problems;
}

/** ValidatePortNumOrName: 1-65535, or an IANA service name (at most 15 characters, a letter among them). */
function portProblem(port: unknown): string | undefined {
  if (port === undefined || port === null || port === '') return 'is required';
  if (typeof port === 'number')
    return Number.isInteger(port) && port >= 1 && port <= 65535
      ? undefined
      : `must be between 1 and 65535, not ${port}`;
  if (typeof port !== 'string') return 'must be a port number or name';
  if (/^\d+$/.test(port)) return undefined;
  if (!/^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(port) || !/[a-z]/.test(port) || port.includes('--'))
    return `${JSON.stringify(port)} is not a port name (lowercase letters, digits and single dashes, at most 15)`;
  return undefined;
}

/**
 * The probes and hooks of a container whose {@link probeProblems} are none.
 * A named port is resolved against the container's ports here; a name it
 * does not declare stays a name, which fails when probed, as on the kubelet.
 */
export function containerProbes(c: V1Container): ContainerProbes {
  const out: ContainerProbes = {};
  for (const kind of ['readiness', 'liveness', 'startup'] as const) {
    const probe = c[PROBE_FIELDS[kind]];
    const action = probe && actionOf(probe, c);
    if (!probe || !action) continue;
    out[kind] = { ...timingOf(probe), action };
  }
  for (const hook of ['postStart', 'preStop'] as const) {
    const handler = c.lifecycle?.[hook];
    const action = handler && actionOf(handler, c);
    if (action && !('tcpSocket' in action)) out[hook] = action;
  }
  return out;
}

/**
 * The probes with each exec probe's command expanded as the kubelet's
 * prober expands it (ExpandContainerCommandOnlyStatic): `$(VAR)` from the
 * container's literal env values only, never from one a reference gave.
 * Hooks' commands are run as written, as by the kubelet.
 */
export function expandProbeCommands(probes: ContainerProbes, c: V1Container): ContainerProbes {
  const literal = new Map<string, string>();
  for (const e of c.env ?? []) if (!e.valueFrom) literal.set(e.name, e.value ?? '');
  const out: ContainerProbes = { ...probes };
  for (const kind of ['readiness', 'liveness', 'startup'] as const) {
    const spec = probes[kind];
    if (!spec || !('exec' in spec.action)) continue;
    const command = spec.action.exec.command.map((word) => expandEnv(word, (name) => literal.get(name)));
    out[kind] = { ...spec, action: { exec: { command } } };
  }
  return out;
}

function timingOf(probe: V1Probe): ProbeTiming {
  const positive = (value: number | undefined, fallback: number) =>
    value !== undefined && value > 0 ? value : fallback;
  return {
    initialDelaySeconds: probe.initialDelaySeconds ?? DEFAULT_TIMING.initialDelaySeconds,
    periodSeconds: positive(probe.periodSeconds, DEFAULT_TIMING.periodSeconds),
    timeoutSeconds: positive(probe.timeoutSeconds, DEFAULT_TIMING.timeoutSeconds),
    successThreshold: positive(probe.successThreshold, DEFAULT_TIMING.successThreshold),
    failureThreshold: positive(probe.failureThreshold, DEFAULT_TIMING.failureThreshold),
  };
}

function actionOf(handler: Pick<V1Probe, 'exec' | 'httpGet' | 'tcpSocket'>, c: V1Container) {
  if (handler.exec) return { exec: { command: [...(handler.exec.command ?? [])] } };
  if (handler.httpGet) {
    const get = handler.httpGet;
    return {
      httpGet: {
        scheme: get.scheme === 'HTTPS' ? ('HTTPS' as const) : ('HTTP' as const),
        ...(get.host ? { host: get.host } : {}),
        path: get.path || '/',
        port: resolvePort(get.port, c),
        headers: (get.httpHeaders ?? []).map((h) => ({ name: h.name, value: h.value ?? '' })),
      },
    };
  }
  if (handler.tcpSocket) {
    const tcp = handler.tcpSocket;
    return { tcpSocket: { ...(tcp.host ? { host: tcp.host } : {}), port: resolvePort(tcp.port, c) } };
  }
  return undefined;
}

/** The kubelet's extractPort: a number, a name of the container's ports, or a number written as a string. */
function resolvePort(port: number | string, c: V1Container): ProbePort {
  if (typeof port === 'number') return port;
  const named = c.ports?.find((p) => p.name === port);
  if (named) return named.containerPort;
  return /^\d+$/.test(port) ? Number(port) : { name: port };
}

/** Whether a container has anything a prober must run. */
export function hasProbesOrHooks(probes: ContainerProbes): boolean {
  return Object.values(probes).some((v) => v !== undefined);
}
