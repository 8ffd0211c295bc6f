/**
 * Pieces shared by the benchmarks in bench/: the local environment (control
 * plane and DynamoDB Local), counting the HTTP requests this process sends
 * (through node:diagnostics_channel, so the code under test is measured
 * without being changed), kube-apiserver's own request counters, CPU from
 * /proc, and small statistics and report helpers.
 */
import { subscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../lib/local/control-plane.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '../lib/local/dynamodb-local.ts';

export type Log = (line: string) => void;

/** Lines on stderr with a tag and the time, so stdout stays for the report. */
export function benchLog(tag: string): Log {
  return (line) => process.stderr.write(`[${tag} ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

// ---------------------------------------------------------------------------
// Environment

export interface BenchEnvironment {
  controlPlane: ControlPlane;
  dynamo: DynamoDbLocal;
  /** Process ids by component: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, dynamodb-local. */
  pids: Map<string, number>;
  /** Stops both; idempotent. */
  stop(): Promise<void>;
}

const CONTROL_PLANE_COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

/**
 * Starts a control plane under `dir` and an in-memory DynamoDB Local, in
 * parallel. Whatever started is stopped again when the other fails.
 */
export async function startBenchEnvironment(options: { dir: string; log: Log }): Promise<BenchEnvironment> {
  const { dir, log } = options;
  const started = performance.now();
  const [cp, db] = await Promise.allSettled([
    startControlPlane({ dir, log }),
    startDynamoDbLocal({ inMemory: true, log }),
  ]);
  if (cp.status === 'rejected' || db.status === 'rejected') {
    if (cp.status === 'fulfilled') await cp.value.stop();
    if (db.status === 'fulfilled') await db.value.stop();
    throw cp.status === 'rejected' ? cp.reason : (db as PromiseRejectedResult).reason;
  }
  const controlPlane = cp.value;
  const dynamo = db.value;
  const pids = new Map<string, number>([['dynamodb-local', dynamo.pid]]);
  for (const name of CONTROL_PLANE_COMPONENTS) {
    pids.set(name, Number(readFileSync(join(controlPlane.dir, 'pids', `${name}.pid`), 'utf8')));
  }
  log(`environment ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  let stopping: Promise<void> | undefined;
  return {
    controlPlane,
    dynamo,
    pids,
    stop: () => {
      stopping ??= Promise.allSettled([controlPlane.stop(), dynamo.stop()]).then(() => undefined);
      return stopping;
    },
  };
}

/**
 * An AbortSignal that aborts on the first SIGINT or SIGTERM, so the benchmark
 * can clean up; a second signal exits at once.
 */
export function interruptSignal(log: Log): AbortSignal {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping and cleaning up (again to exit at once)`);
    controller.abort(new Error(`interrupted by ${signal}`));
    process.once(signal, () => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return controller.signal;
}

// ---------------------------------------------------------------------------
// Counting this process's HTTP requests

/** Adds one to `key` in `counts`. */
export function bump(counts: Map<string, number>, key: string, by = 1): void {
  counts.set(key, (counts.get(key) ?? 0) + by);
}

/** `after - before`, key by key, keeping only keys that grew. */
export function diffCounts(after: ReadonlyMap<string, number>, before: ReadonlyMap<string, number>) {
  const diff = new Map<string, number>();
  for (const [key, value] of after) {
    const delta = value - (before.get(key) ?? 0);
    if (delta > 0) diff.set(key, delta);
  }
  return diff;
}

export function sumCounts(
  counts: ReadonlyMap<string, number>,
  filter: (key: string) => boolean = () => true,
) {
  let total = 0;
  for (const [key, value] of counts) if (filter(key)) total += value;
  return total;
}

function isRequestMessage(message: unknown): message is { request: ClientRequest } {
  return typeof message === 'object' && message !== null && 'request' in message;
}

/**
 * Counts every HTTP request this process starts, under the key `classify`
 * returns (undefined: not counted). `classify` runs synchronously where the
 * request is created, so AsyncLocalStorage (e.g. the local Lambda runtime's
 * invocation scope) still says whose request it is.
 */
export class HttpRequestCounter {
  private readonly counts = new Map<string, number>();
  private readonly waits = new Map<string, RequestLatency>();
  private readonly connects = new Map<string, number>();
  private readonly open = new WeakMap<ClientRequest, { key: string; at: number }>();

  constructor(classify: (request: ClientRequest) => string | undefined) {
    subscribe('http.client.request.start', (message) => {
      if (!isRequestMessage(message)) return;
      const key = classify(message.request);
      if (key === undefined) return;
      bump(this.counts, key);
      this.open.set(message.request, { key, at: performance.now() });
    });
    // Published when the response's headers arrive: the server's answer time plus any wait for a socket.
    subscribe('http.client.response.finish', (message) => {
      if (!isRequestMessage(message)) return;
      const started = this.open.get(message.request);
      if (!started) return;
      this.open.delete(message.request);
      // Known once a socket was assigned: false for a new TCP (and TLS) connection.
      if (!message.request.reusedSocket) bump(this.connects, started.key);
      const ms = performance.now() - started.at;
      const entry = this.waits.get(started.key) ?? { count: 0, totalMs: 0, maxMs: 0 };
      entry.count++;
      entry.totalMs += ms;
      entry.maxMs = Math.max(entry.maxMs, ms);
      this.waits.set(started.key, entry);
    });
  }

  /** A copy of the counts so far. */
  snapshot(): Map<string, number> {
    return new Map(this.counts);
  }

  /** Answered requests that went out on a new connection (not a kept-alive one), by key. */
  connections(): Map<string, number> {
    return new Map(this.connects);
  }

  /** A copy of the answer times so far, by key. */
  latencies(): Map<string, RequestLatency> {
    return new Map([...this.waits].map(([key, l]) => [key, { ...l }]));
  }
}

/** Answer times of the requests of one kind that got an answer. */
export interface RequestLatency {
  count: number;
  totalMs: number;
  maxMs: number;
}

/** The latencies of the requests answered between two `latencies()` snapshots (max: over the whole run). */
export function diffLatencies(
  after: ReadonlyMap<string, RequestLatency>,
  before: ReadonlyMap<string, RequestLatency>,
): Map<string, RequestLatency> {
  const diff = new Map<string, RequestLatency>();
  for (const [key, a] of after) {
    const b = before.get(key) ?? { count: 0, totalMs: 0, maxMs: 0 };
    if (a.count > b.count)
      diff.set(key, { count: a.count - b.count, totalMs: a.totalMs - b.totalMs, maxMs: a.maxMs });
  }
  return diff;
}

/** The first value of a request header (node-fetch sets headers as arrays). */
export function headerValue(request: ClientRequest, name: string): string | undefined {
  const value = request.getHeader(name);
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : String(first);
}

/**
 * A Kubernetes API request as kube-apiserver's `apiserver_request_total`
 * names it: `VERB resource[/subresource]` (`LIST pods`, `PUT pods/status`,
 * `WATCH pods`, `POST events`); undefined for non-resource paths.
 */
export function kubeRequestKind(method: string, path: string): string | undefined {
  const [pathname = '', query = ''] = path.split('?');
  const parts = pathname.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : undefined;
  if (!rest || rest.length === 0) return undefined;
  const scoped = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  const [resource, name, subresource] = scoped;
  if (!resource) return undefined;
  const watch = /(^|&)watch=(true|1)(&|$)/.test(query);
  const m = method.toUpperCase();
  const verb =
    m === 'GET'
      ? watch
        ? 'WATCH'
        : name === undefined
          ? 'LIST'
          : 'GET'
      : m === 'DELETE' && !name
        ? 'DELETECOLLECTION'
        : m;
  return `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;
}

/** The DynamoDB operation of an AWS SDK request (`GetItem`, `Query`...), from its X-Amz-Target header. */
export function dynamoDbOperation(request: ClientRequest): string | undefined {
  const target = headerValue(request, 'x-amz-target');
  return target?.startsWith('DynamoDB_') ? target.slice(target.indexOf('.') + 1) : undefined;
}

// ---------------------------------------------------------------------------
// kube-apiserver's own counters

/**
 * `apiserver_request_total` summed by `VERB resource[/subresource]` over all
 * clients and response codes, read from `/metrics` with `kc`'s credentials
 * (cluster-admin). Non-resource requests are left out.
 */
export async function scrapeApiserverRequests(kc: KubeConfig, server: string): Promise<Map<string, number>> {
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(`${server}/metrics`, { ...options, method: 'GET', timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(body);
        else reject(new Error(`GET /metrics answered ${res.statusCode}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('GET /metrics timed out')));
    req.on('error', reject);
    req.end();
  });
  const totals = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const end = line.lastIndexOf('}');
    const labels = new Map(
      [...line.slice(line.indexOf('{') + 1, end).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const resource = labels.get('resource');
    if (!resource) continue;
    const subresource = labels.get('subresource');
    bump(
      totals,
      `${labels.get('verb') ?? '?'} ${resource}${subresource ? `/${subresource}` : ''}`,
      Number(line.slice(end + 1).trim()),
    );
  }
  return totals;
}

// ---------------------------------------------------------------------------
// CPU

/** Linux's USER_HZ: /proc times are in these ticks. */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system, seconds) of each process still running. */
export function processCpuSeconds(pids: ReadonlyMap<string, number>): Map<string, number> {
  const result = new Map<string, number>();
  for (const [name, pid] of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // The command may contain spaces: fields are counted after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      result.set(name, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
    } catch {
      // Gone: no figure.
    }
  }
  return result;
}

/** Busy CPU time of the whole machine (all cores, seconds), from /proc/stat: to see load that is not ours. */
export function machineBusySeconds(): number {
  const [cpuLine = ''] = readFileSync('/proc/stat', 'utf8').split('\n');
  // user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
  const ticks = cpuLine.trim().split(/\s+/).slice(1, 9).map(Number);
  const all = ticks.reduce((a, t) => a + t, 0);
  return (all - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / TICKS_PER_SECOND;
}

// ---------------------------------------------------------------------------
// Statistics and reports

/** Nearest-rank percentile of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

export interface Distribution {
  count: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

/** A number with `digits` decimals, or `n/a`. */
export function fixed(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

/** `2 cores (AMD EPYC), 23.4 GiB RAM`: the machine a figure was taken on. */
export function machineSummary(): string {
  const list = cpus();
  const model = list[0]?.model.trim() || 'unknown CPU';
  return `${list.length} cores (${model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM`;
}

// ---------------------------------------------------------------------------
// Watching

/**
 * Watches `path` until stopped, resuming from the last resourceVersion when
 * the server ends the stream. After a 410 (an ERROR event) it starts over
 * without one: the server then replays the current objects as ADDED, and
 * whatever happened in between is missed -- logged, never hidden.
 */
export async function resumingWatch(
  kc: KubeConfig,
  path: string,
  query: Record<string, string>,
  onEvent: (type: string, object: unknown) => void,
  log: Log,
): Promise<{ stop(): void }> {
  let stopped = false;
  let resourceVersion: string | undefined;
  let current: AbortController | undefined;
  const restart = (err: unknown) => {
    if (stopped) return;
    if (err) log(`watch ${path} ended: ${String(err)}; resuming`);
    void delay(500).then(() => (stopped ? undefined : start()));
  };
  const start = async (): Promise<void> => {
    try {
      current = await new Watch(kc).watch(
        path,
        { ...query, allowWatchBookmarks: true, ...(resourceVersion ? { resourceVersion } : {}) },
        (type, object: unknown) => {
          if (type === 'ERROR') {
            log(`watch ${path}: ${JSON.stringify(object)}; starting over`);
            resourceVersion = undefined;
            return;
          }
          const rv = (object as { metadata?: { resourceVersion?: string } } | undefined)?.metadata
            ?.resourceVersion;
          if (rv) resourceVersion = rv;
          if (type !== 'BOOKMARK') onEvent(type, object);
        },
        restart,
      );
    } catch (err) {
      restart(err);
    }
  };
  await start();
  return {
    stop: () => {
      stopped = true;
      current?.abort();
    },
  };
}
