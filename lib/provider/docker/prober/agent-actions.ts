import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { HookAction, ProbeAction, ProbePort } from '../../container-probes.ts';
import type { AgentEngine } from './agent-engine.ts';

/**
 * What a probe or a hook does, as the kubelet does it (pkg/probe/http,
 * pkg/probe/tcp, pkg/probe/exec, pkg/kubelet/lifecycle/handlers.go), run
 * by the prober from the engine host: HTTP and TCP to the pod IP (or the
 * action's host) on the engine's network, commands through the engine's
 * exec in the container.
 */

/** The kubelet reads at most this much of a probe's output or a response body (maxRespBodyLength). */
export const OUTPUT_LIMIT = 10 * 1024;
/** How many redirects to the same host an HTTP probe follows. */
const MAX_REDIRECTS = 10;
/** The User-Agent the kubelet of the control plane's version sends. */
export const PROBE_USER_AGENT = 'kube-probe/1.20';

/**
 * How a probe ended. `error` is the kubelet's "probe errored" (the action
 * could not be set up: a port name the container does not declare, an exec
 * the engine refused): a failure too, worded differently. `warning` is a
 * success whose output is worth an event (a redirect to another host).
 */
export type ActionOutcome =
  | { kind: 'success'; output: string }
  | { kind: 'warning'; output: string }
  | { kind: 'failure'; output: string }
  | { kind: 'error'; message: string };

export interface ActionTarget {
  engine: AgentEngine;
  /** The engine container id of the instance. */
  containerId: string;
  /** The pod's IP, for an HTTP or TCP action without a host. */
  podIp?: string;
}

export async function runProbeAction(
  action: ProbeAction,
  target: ActionTarget,
  timeoutMs: number,
): Promise<ActionOutcome> {
  if ('exec' in action) return execProbe(target, action.exec.command, timeoutMs);
  const host = (('httpGet' in action ? action.httpGet.host : action.tcpSocket.host) || target.podIp) ?? '';
  if (!host) return { kind: 'error', message: 'the pod has no IP' };
  if ('tcpSocket' in action) {
    const port = probePort(action.tcpSocket.port);
    if (typeof port === 'string') return { kind: 'error', message: port };
    return tcpProbe(host, port, timeoutMs);
  }
  const get = action.httpGet;
  const port = probePort(get.port);
  if (typeof port === 'string') return { kind: 'error', message: port };
  return httpProbe(new URL(probeUrl(get.scheme, host, port, get.path)), get.headers, timeoutMs);
}

/**
 * Runs a hook. The kubelet gives an exec hook no timeout and takes any
 * HTTP answer as success (handlers.go); `timeoutMs` only bounds a preStop
 * hook by what is left of the grace period. Resolves with an error message
 * worded as the kubelet's FailedPostStartHook and FailedPreStopHook events
 * are, or undefined when it succeeded.
 */
export async function runHookAction(
  action: HookAction,
  target: ActionTarget & { container: string; pod: string },
  timeoutMs: number,
): Promise<string | undefined> {
  if ('exec' in action) {
    const command = action.exec.command;
    try {
      const run = await target.engine.exec(target.containerId, command, timeoutMs, OUTPUT_LIMIT);
      if (run.exitCode === 0) return undefined;
      const error =
        run.exitCode === undefined
          ? 'timed out'
          : `command '${command.join(' ')}' exited with ${run.exitCode}`;
      return `Exec lifecycle hook (${goList(command)}) for Container "${target.container}" in Pod "${target.pod}" failed - error: ${error}, message: ${JSON.stringify(run.output)}`;
    } catch (err) {
      return `Exec lifecycle hook (${goList(command)}) for Container "${target.container}" in Pod "${target.pod}" failed - error: ${message(err)}, message: ""`;
    }
  }
  const get = action.httpGet;
  const fail = (error: string) =>
    `Http lifecycle hook (${get.path}) for Container "${target.container}" in Pod "${target.pod}" failed - error: ${error}, message: ""`;
  const host = get.host || target.podIp;
  if (!host) return fail('failed to find networking container');
  const port = typeof get.port === 'number' ? get.port : undefined;
  if (port === undefined)
    return fail(
      `couldn't find port: ${(get.port as { name: string }).name} in container ${target.container}`,
    );
  try {
    await fetchOnce(new URL(probeUrl(get.scheme, host, port, get.path)), [], timeoutMs, true);
    return undefined;
  } catch (err) {
    return fail(message(err));
  }
}

/** The kubelet's extractPort: a named port the container lacks fails as strconv.Atoi does on the name. */
function probePort(port: ProbePort): number | string {
  return typeof port === 'number'
    ? port
    : `strconv.Atoi: parsing ${JSON.stringify(port.name)}: invalid syntax`;
}

function probeUrl(scheme: 'HTTP' | 'HTTPS', host: string, port: number, path: string): string {
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const rest = path.startsWith('/') ? path : `/${path}`;
  return `${scheme.toLowerCase()}://${hostPart}:${port}${rest}`;
}

async function execProbe(
  target: ActionTarget,
  command: readonly string[],
  timeoutMs: number,
): Promise<ActionOutcome> {
  try {
    const run = await target.engine.exec(target.containerId, command, timeoutMs, OUTPUT_LIMIT);
    if (run.exitCode === undefined) return { kind: 'failure', output: run.output };
    return { kind: run.exitCode === 0 ? 'success' : 'failure', output: run.output };
  } catch (err) {
    return { kind: 'error', message: message(err) };
  }
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ActionOutcome> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (outcome: ActionOutcome) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => done({ kind: 'failure', output: `dial tcp ${host}:${port}: i/o timeout` }),
      timeoutMs,
    );
    socket.once('connect', () => done({ kind: 'success', output: '' }));
    socket.once('error', (err) =>
      done({ kind: 'failure', output: `dial tcp ${host}:${port}: ${message(err)}` }),
    );
  });
}

/**
 * DoHTTPProbe: a GET with the kubelet's User-Agent and `Accept: *\/*` (unless
 * the headers set them), redirects followed to the same host only (up to
 * 10); 200-399 succeeds, a 3xx left unfollowed is a warning, anything else
 * fails with the status code.
 */
async function httpProbe(
  url: URL,
  headers: ReadonlyArray<{ name: string; value: string }>,
  timeoutMs: number,
): Promise<ActionOutcome> {
  const deadline = Date.now() + timeoutMs;
  let current = url;
  try {
    for (let redirects = 0; ; redirects++) {
      const res = await fetchOnce(current, headers, Math.max(1, deadline - Date.now()), false);
      const location = res.location;
      if (res.status >= 300 && res.status < 400 && location) {
        const next = new URL(location, current);
        if (next.hostname !== url.hostname) return { kind: 'warning', output: res.body };
        if (redirects >= MAX_REDIRECTS) return { kind: 'failure', output: 'stopped after 10 redirects' };
        current = next;
        continue;
      }
      if (res.status >= 200 && res.status < 300) return { kind: 'success', output: res.body };
      if (res.status >= 300 && res.status < 400) return { kind: 'warning', output: res.body };
      return { kind: 'failure', output: `HTTP probe failed with statuscode: ${res.status}` };
    }
  } catch (err) {
    return { kind: 'failure', output: message(err) };
  }
}

interface Fetched {
  status: number;
  location?: string;
  body: string;
}

/** One GET without connection reuse (the kubelet disables keep-alive), TLS unverified (InsecureSkipVerify). */
function fetchOnce(
  url: URL,
  headers: ReadonlyArray<{ name: string; value: string }>,
  timeoutMs: number,
  followRedirects: boolean,
): Promise<Fetched> {
  const sent: Record<string, string | string[]> = {};
  for (const { name, value } of headers) {
    const key = name.toLowerCase();
    const before = sent[key];
    sent[key] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
  }
  if (sent['user-agent'] === undefined) sent['user-agent'] = PROBE_USER_AGENT;
  if (sent.accept === undefined) sent.accept = '*/*';
  else if (sent.accept === '') delete sent.accept;
  sent.connection = 'close';
  return new Promise((resolve, reject) => {
    const options = { method: 'GET', headers: sent, agent: false as const, rejectUnauthorized: false };
    const onResponse = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < OUTPUT_LIMIT) chunks.push(chunk.subarray(0, OUTPUT_LIMIT - size));
        size += chunk.length;
      });
      res.on('end', () => {
        clearTimeout(timer);
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (followRedirects && status >= 300 && status < 400 && location) {
          fetchOnce(new URL(location, url), headers, timeoutMs, true).then(resolve, reject);
          return;
        }
        resolve({ status, ...(location ? { location } : {}), body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, options, onResponse)
        : httpRequest(url, options, onResponse);
    const timer = setTimeout(() => {
      req.destroy(
        new Error(
          `Get "${url.href}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
        ),
      );
    }, timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

/** Go's %v of a string slice: `[a b c]`. */
function goList(words: readonly string[]): string {
  return `[${words.join(' ')}]`;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
