/**
 * Heartbeat benchmark: lease renewal gaps and Kubernetes
 * API requests per node-minute for 1, 100 and 1000 virtual nodes served by
 * one deployment, on a real local control plane and DynamoDB Local.
 *
 * Usage: npx tsx bench/heartbeat.ts [--nodes 1,100,1000] [--minutes 6] [--cadence tick,continuous]
 *          [--parts all|heartbeat,...]
 *   A node count may set its own SVK_HEARTBEAT_MAX_PARALLEL: --nodes 1000@64.
 *
 * Each node count and cadence is its own deployment (fresh table, so its
 * own heartbeat lock; nodes `bench-<label>-<i>`) running the real handler in
 * the local Lambda runtime as in production. tick (the production default):
 * functions/tick.ts behind the in-process FIFO queue (10 s delay, 12 s
 * visibility timeout) and its keeper, as LocalDeployment runs it, with
 * SVK_TICK_PARTS from --parts (default all four parts, as deployed; `heartbeat`
 * alone, as a large deployment splits it off). continuous:
 * functions/heartbeat.ts on a schedule every 60 s, timeout 130 s, so
 * invocations overlap and hand over.
 * Requests are attributed to the tick part that sent them
 * (bench/tick-part-scope.ts): the heartbeat's figures are its own, the other
 * parts' are reported beside them.
 * Everything is measured from outside the code under test:
 * - renewal gaps: a watch on kube-node-lease; a gap is the difference between
 *   consecutive renewTimes of one lease;
 * - requests: every HTTP request this process sends with the virtual
 *   kubelet's token, seen through node:diagnostics_channel (the handler does
 *   not expose its counters), cross-checked against kube-apiserver's own
 *   `apiserver_request_total`;
 * - Ready: a watch on the nodes (did the node lifecycle controller ever take
 *   Ready away?); CPU from /proc for every process involved.
 */
import { subscribe } from 'node:diagnostics_channel';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Context } from 'aws-lambda';
import { createHeartbeatHandler } from '../functions/heartbeat.ts';
import { TICK_PART_NAMES, type TickPartName } from '../lib/config/env-variables.ts';
import { loadKubeConfig } from '../lib/kube/client.ts';
import { createToolingClients, type ToolingClients } from '../lib/kube/tooling-clients.ts';
import type { Cadence } from '../lib/local/cadence.ts';
import { type ControlPlane, startControlPlane } from '../lib/local/control-plane.ts';
import { type DynamoDbLocal, startDynamoDbLocal } from '../lib/local/dynamodb-local.ts';
import { currentInvocation } from '../lib/local/invocation-scope.ts';
import { type InvocationResult, LocalLambdaRuntime } from '../lib/local/lambda-runtime.ts';
import { LocalDeployment } from '../lib/local/local-deployment.ts';
import { lockKey } from '../lib/lock/dynamodb-lock-store.ts';
import { HEARTBEAT_LOCK } from '../lib/lock/lock-names.ts';
import { NODE_LEASE_NAMESPACE } from '../lib/node/node-lease.ts';
import { StateTable } from '../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import { kubeRequestKind, resumingWatch } from './support.ts';
import { attributeTickParts, currentTickPart } from './tick-part-scope.ts';

/** Production cadence (serverless.yml): rate(1 minute), timeout 130 s. */
const RATE_MS = 60_000;
const TIMEOUT_MS = 130_000;
const DEFAULT_MAX_PARALLEL = 16;
/**
 * The target per node-minute: virtual-kubelet's about 7 (6 lease updates, every 10 s, and a status
 * write when due); a 1.20 kubelet sends about 12 (a Node GET with each lease update besides).
 */
const TARGET_PER_NODE_MINUTE = 7;
/** The first minute registers nodes and creates leases: not the steady state. */
const WARMUP_MS = 60_000;
/** Gaps above this mean a renewal interval (10 s) was missed by more than half. */
const LATE_GAP_MS = 15_000;
/** The node lifecycle controller's grace period in 1.20: a gap this long can flip Ready. */
const GRACE_MS = 40_000;
const LOCK_POLL_MS = 200;

const root = new URL('..', import.meta.url).pathname;
const benchDir = join(root, '.local', 'bench');

function log(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

// ---------------------------------------------------------------------------
// Options

interface RunSpec {
  nodes: number;
  maxParallel: number;
  cadence: Cadence;
  /** The tick's parts (SVK_TICK_PARTS); the continuous cadence runs the heartbeat function alone. */
  parts: readonly TickPartName[];
  /** Node-name infix: `c1000` (continuous) or `t1000` (tick), with `p64` for a non-default parallelism. */
  label: string;
}

function parseCadences(raw: string): Cadence[] {
  const cadences = raw.split(',').map((c) => c.trim());
  for (const c of cadences) {
    if (c !== 'tick' && c !== 'continuous') throw new Error(`--cadence: "${c}" is not tick or continuous`);
  }
  return cadences as Cadence[];
}

function parseParts(raw: string): TickPartName[] {
  if (raw.trim() === 'all') return [...TICK_PART_NAMES];
  const parts = raw.split(',').map((p) => p.trim());
  const known = (p: string): p is TickPartName => (TICK_PART_NAMES as readonly string[]).includes(p);
  const unknown = parts.filter((p) => !known(p));
  if (unknown.length > 0 || !parts.includes('heartbeat'))
    throw new Error(`--parts: "${raw}" is not all or a list of ${TICK_PART_NAMES.join(', ')} with heartbeat`);
  return parts.filter(known);
}

function parseOptions(argv: string[]): { runs: RunSpec[]; minutes: number } {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string', default: '1,100,1000' },
      // The first minute is warm-up; 6 leaves a window of one status interval (300 s).
      minutes: { type: 'string', default: '6' },
      cadence: { type: 'string', default: 'tick' },
      parts: { type: 'string', default: 'all' },
    },
  });
  const cadences = parseCadences(values.cadence);
  const parts = parseParts(values.parts);
  const minutes = Number(values.minutes);
  // The first minute is warm-up (registration), so the steady state needs more.
  if (!(minutes > 1)) throw new Error(`--minutes must be a number above 1, got "${values.minutes}"`);
  const runs = values.nodes.split(',').flatMap((part): RunSpec[] => {
    const match = /^\s*(\d+)(?:@(\d+))?\s*$/.exec(part);
    const nodes = Number(match?.[1]);
    const maxParallel = match?.[2] === undefined ? DEFAULT_MAX_PARALLEL : Number(match[2]);
    if (!match || !(nodes >= 1) || !(maxParallel >= 1 && maxParallel <= 256)) {
      throw new Error(`--nodes: "${part}" is not N or N@parallel (1 <= parallel <= 256)`);
    }
    return cadences.map((cadence) => ({
      nodes,
      maxParallel,
      cadence,
      parts: cadence === 'tick' ? parts : ['heartbeat'],
      label: `${cadence[0]}${nodes}${maxParallel === DEFAULT_MAX_PARALLEL ? '' : `p${maxParallel}`}`,
    }));
  });
  if (new Set(runs.map((r) => r.label)).size !== runs.length) throw new Error('--nodes: a run is repeated');
  return { runs, minutes };
}

// ---------------------------------------------------------------------------
// Requests of the code under test, seen from the HTTP client

const REQUEST_KINDS = [
  'lease PUT',
  'lease GET',
  'lease POST',
  'node LIST',
  'node GET',
  'node POST',
  'status PATCH',
  'other',
] as const;
type RequestKind = (typeof REQUEST_KINDS)[number];

/** The apiserver_request_total series (verb, resource[/subresource]) each of our kinds lands in. */
const APISERVER_SERIES: Record<RequestKind, string[]> = {
  'lease PUT': ['PUT leases'],
  'lease GET': ['GET leases'],
  'lease POST': ['POST leases'],
  'node LIST': ['LIST nodes'],
  'node GET': ['GET nodes'],
  'node POST': ['POST nodes'],
  // Server-side apply is reported as APPLY from 1.19 on; PATCH for a merge patch.
  'status PATCH': ['APPLY nodes/status', 'PATCH nodes/status'],
  other: [],
};

const LEASES_PATH = `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`;

/** What a request of the heartbeat is for, from its method and path. */
function classify(method: string, path: string): RequestKind {
  const [pathname = ''] = path.split('?');
  const m = method.toUpperCase();
  if (pathname === LEASES_PATH && m === 'POST') return 'lease POST';
  if (pathname.startsWith(`${LEASES_PATH}/`)) {
    if (m === 'PUT') return 'lease PUT';
    if (m === 'GET') return 'lease GET';
    return 'other';
  }
  if (pathname === '/api/v1/nodes') {
    if (m === 'GET') return 'node LIST';
    if (m === 'POST') return 'node POST';
    return 'other';
  }
  if (/^\/api\/v1\/nodes\/[^/]+\/status$/.test(pathname) && m === 'PATCH') return 'status PATCH';
  if (/^\/api\/v1\/nodes\/[^/]+$/.test(pathname) && m === 'GET') return 'node GET';
  return 'other';
}

interface RequestRecord {
  kind: RequestKind;
  /** The tick part that sent it (heartbeat for the continuous cadence's heartbeat function). */
  part: string;
  /** Verb and resource, as kube-apiserver counts them (`GET nodes`, `WATCH pods`). */
  verb: string;
  /** performance.now() at start and when the response arrived. */
  at: number;
  doneAt?: number;
  status?: number;
  failed?: boolean;
  /** Whether it went over a kept-alive connection rather than a new TCP + TLS handshake. */
  reusedSocket?: boolean;
}

function isRequestMessage(
  message: unknown,
): message is { request: ClientRequest; response?: IncomingMessage } {
  return typeof message === 'object' && message !== null && 'request' in message;
}

/**
 * Records every HTTP request that carries `authorization`, i.e. that the
 * virtual kubelet's identity sends. The benchmark's own requests (watches,
 * metrics, clean-up) use the admin identity and are not counted.
 */
class RequestRecorder {
  private records: RequestRecord[] = [];
  private readonly open = new WeakMap<ClientRequest, RequestRecord>();

  constructor(private readonly authorization: string) {
    subscribe('http.client.request.start', (message) => {
      if (!isRequestMessage(message)) return;
      const { request } = message;
      // node-fetch hands its headers to node:http as arrays of values.
      const header = request.getHeader('authorization');
      if ((Array.isArray(header) ? header[0] : header) !== this.authorization) return;
      const record: RequestRecord = {
        kind: classify(request.method, request.path),
        // Outside any tick part: the function's name (the continuous cadence's `heartbeat`; `tick` would
        // be the tick's own requests outside its parts, of which there are none).
        part: currentTickPart() ?? currentInvocation()?.functionName ?? 'outside',
        verb: kubeRequestKind(request.method, request.path) ?? 'other',
        at: performance.now(),
      };
      this.records.push(record);
      this.open.set(request, record);
    });
    subscribe('http.client.response.finish', (message) => {
      if (!isRequestMessage(message)) return;
      const record = this.open.get(message.request);
      if (!record) return;
      record.doneAt = performance.now();
      record.reusedSocket = message.request.reusedSocket;
      if (message.response?.statusCode !== undefined) record.status = message.response.statusCode;
    });
    subscribe('http.client.request.error', (message) => {
      if (!isRequestMessage(message)) return;
      const record = this.open.get(message.request);
      if (record) record.failed = true;
    });
  }

  /** The records since the last call, and forgets them. */
  take(): RequestRecord[] {
    const taken = this.records;
    this.records = [];
    return taken;
  }
}

// ---------------------------------------------------------------------------
// What the API server sees: watches on leases and nodes, and its own metrics

interface LeaseLog {
  /** renewTime (epoch ms) of every write we saw, in order. */
  renewals: number[];
}

interface NodeLog {
  readyAt?: number;
  /** Every Ready lastHeartbeatTime (epoch ms) we saw: a status write is a heartbeat too. */
  statusHeartbeats: number[];
  /** How often Ready went from True to anything else. */
  leftReady: number;
  ready: boolean;
}

interface LeaseObject {
  metadata?: { name?: string };
  spec?: { renewTime?: string };
}
interface NodeObject {
  metadata?: { name?: string };
  status?: { conditions?: Array<{ type?: string; status?: string; lastHeartbeatTime?: string }> };
}

/** Counts of apiserver_request_total by `VERB resource[/subresource]`, nodes and leases only, watches excluded. */
async function scrapeRequestTotals(kc: KubeConfig, server: string): Promise<Map<string, number>> {
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(`${server}/metrics`, { ...options, method: 'GET', timeout: 30_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        res.statusCode === 200 ? resolve(body) : reject(new Error(`/metrics: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('/metrics timed out')));
    req.on('error', reject);
    req.end();
  });
  const totals = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const close = line.lastIndexOf('}');
    const labels = Object.fromEntries(
      [...line.slice(line.indexOf('{') + 1, close).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const { verb = '', resource = '', subresource = '' } = labels;
    if (!['nodes', 'leases'].includes(resource) || verb.startsWith('WATCH')) continue;
    const key = `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;
    totals.set(key, (totals.get(key) ?? 0) + Number(line.slice(close + 1).trim()));
  }
  return totals;
}

function diffTotals(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const diff = new Map<string, number>();
  for (const [key, value] of after) {
    const delta = value - (before.get(key) ?? 0);
    if (delta > 0) diff.set(key, delta);
  }
  return diff;
}

// ---------------------------------------------------------------------------
// CPU from /proc

const CLOCK_TICKS_PER_S = 100;

/** utime + stime of `pid` in seconds, or undefined when it is gone. */
function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of proc(5), counted from the state field (3).
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

/** Busy and total CPU time of the whole machine, in seconds. */
function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [, ...values] = line.trim().split(/\s+/);
  const n = values.map(Number);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  return { busy: (total - idle) / CLOCK_TICKS_PER_S, total: total / CLOCK_TICKS_PER_S };
}

interface CpuSnapshot {
  at: number;
  processes: Map<string, number>;
  bench: NodeJS.CpuUsage;
  machine: { busy: number; total: number };
}

function cpuSnapshot(pids: Map<string, number>): CpuSnapshot {
  const processes = new Map<string, number>();
  for (const [name, pid] of pids) {
    const seconds = processCpuSeconds(pid);
    if (seconds !== undefined) processes.set(name, seconds);
  }
  return { at: performance.now(), processes, bench: process.cpuUsage(), machine: machineCpuSeconds() };
}

/** Average CPU of each process over the interval, in % of one core. */
function cpuPercent(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  const wall = (after.at - before.at) / 1000;
  const result: Record<string, number> = {
    bench:
      (((after.bench.user - before.bench.user + after.bench.system - before.bench.system) / 1e6) * 100) /
      wall,
  };
  for (const [name, seconds] of after.processes) {
    const was = before.processes.get(name);
    if (was !== undefined) result[name] = ((seconds - was) * 100) / wall;
  }
  const total = after.machine.total - before.machine.total;
  // All cores: 100 % per core, like the process figures.
  result.machine = total > 0 ? ((after.machine.busy - before.machine.busy) / total) * 100 * cpus().length : 0;
  // This machine may be shared: what nothing of this benchmark used.
  const ours = Object.entries(result)
    .filter(([name]) => name !== 'machine')
    .reduce((a, [, v]) => a + v, 0);
  result.others = Math.max(0, result.machine - ours);
  return result;
}

// ---------------------------------------------------------------------------
// Statistics

/** Nearest-rank percentile of ascending `sorted`; NaN when empty. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
  );
}

interface RunFigures {
  label: string;
  cadence: Cadence;
  nodes: number;
  maxParallel: number;
  minutes: number;
  renewals: number;
  gaps: { count: number; p50: number; p99: number; max: number; late: number; overGrace: number };
  /** Largest gap spanning a hand-over between invocations, and largest elsewhere. */
  handoverGapMax: number;
  otherGapMax: number;
  /** Largest gap between heartbeats of either kind (lease renewal or Ready lastHeartbeatTime). */
  signalGapMax: number;
  /** Seconds from the start of the run until every node was Ready; undefined when some never were. */
  allReadyAfterS: number | undefined;
  readyNodes: number;
  leftReady: number;
  handoversAtS: number[];
  /** `counts`: the heartbeat part's own; `byPart`: every part's, by verb and resource. */
  steady: {
    fromS: number;
    toS: number;
    aligned: boolean;
    counts: Record<RequestKind, number>;
    byPart: Record<string, Record<string, number>>;
  };
  parts: readonly TickPartName[];
  total: Record<RequestKind, number>;
  /** Requests without an answer (timeout, connection error), or answered 5xx or 429. */
  failedRequests: number;
  statusCodes: Record<string, number>;
  leasePutLatencyMs: { p50: number; p99: number };
  /** Share of answered requests that needed a new connection (TCP + TLS handshake). */
  newConnectionShare: number;
  invocations: Record<string, number>;
  cpu: Record<string, number>;
  rssPeakMb: number;
  heapPeakMb: number;
  /** Over [WARMUP_MS, end]: our counts by kind and the apiserver's by series, for the cross-check. */
  crossCheck: {
    fromS: number;
    toS: number;
    ours: Record<RequestKind, number>;
    apiserver: Record<string, number>;
  };
}

function countKinds(
  records: readonly RequestRecord[],
  from: number,
  to: number,
): Record<RequestKind, number> {
  const counts = Object.fromEntries(REQUEST_KINDS.map((k) => [k, 0])) as Record<RequestKind, number>;
  for (const r of records) if (r.at >= from && r.at < to) counts[r.kind]++;
  return counts;
}

/** Requests in [from, to) by the part that sent them, then by verb and resource. */
function countByPart(
  records: readonly RequestRecord[],
  from: number,
  to: number,
): Record<string, Record<string, number>> {
  const byPart: Record<string, Record<string, number>> = {};
  for (const r of records) {
    if (r.at < from || r.at >= to) continue;
    const counts = byPart[r.part] ?? {};
    counts[r.verb] = (counts[r.verb] ?? 0) + 1;
    byPart[r.part] = counts;
  }
  return byPart;
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

// ---------------------------------------------------------------------------
// One run: N nodes, one deployment

interface Environment {
  controlPlane: ControlPlane;
  dynamo: DynamoDbLocal;
  admin: ToolingClients;
  recorder: RequestRecorder;
  pids: Map<string, number>;
  interrupted: AbortSignal;
}

async function runOnce(envt: Environment, spec: RunSpec, minutes: number): Promise<RunFigures> {
  const { controlPlane, dynamo, admin, recorder, interrupted } = envt;
  const tableName = `svk-bench-${spec.label}-${Date.now().toString(36)}`;
  const { client, doc } = createDynamoDbClient({ endpoint: dynamo.endpoint, region: 'local' });
  await createTable(client, tableName);
  const table = new StateTable(doc, tableName);
  const prefix = `bench-${spec.label}-`;
  const names = Array.from({ length: spec.nodes }, (_, i) => `${prefix}${i}`);
  const selector = `svk-bench=${spec.label}`;
  const env = {
    SVK_KUBECONFIG: controlPlane.kubeletKubeconfig,
    SVK_DYNAMODB_ENDPOINT: dynamo.endpoint,
    AWS_REGION: 'local',
    SVK_TABLE_NAME: tableName,
    SVK_LOG_LEVEL: 'warn',
    // Benchmarks measure the pipeline: pinned to the mock whatever the shell's environment.
    SVK_PROVIDER: 'mock',
    SVK_NODE_NAMES: names.join(','),
    SVK_NODE_LABELS: selector,
    SVK_HEARTBEAT_MAX_PARALLEL: String(spec.maxParallel),
  };

  const leases = new Map<string, LeaseLog>();
  const nodes = new Map<string, NodeLog>();
  const leaseWatch = await resumingWatch(
    admin.config,
    LEASES_PATH,
    {},
    (type, object) => {
      const lease = object as LeaseObject;
      const name = lease.metadata?.name;
      const renew = lease.spec?.renewTime ? Date.parse(lease.spec.renewTime) : Number.NaN;
      if (!name?.startsWith(prefix) || type === 'DELETED' || Number.isNaN(renew)) return;
      const entry = leases.get(name) ?? { renewals: [] };
      leases.set(name, entry);
      const last = entry.renewals.at(-1);
      if (last === undefined || renew > last) entry.renewals.push(renew);
    },
    log,
  );
  const nodeWatch = await resumingWatch(
    admin.config,
    '/api/v1/nodes',
    { labelSelector: selector },
    (type, object) => {
      const node = object as NodeObject;
      const name = node.metadata?.name;
      if (!name || type === 'DELETED') return;
      const entry = nodes.get(name) ?? { leftReady: 0, ready: false, statusHeartbeats: [] };
      nodes.set(name, entry);
      const condition = node.status?.conditions?.find((c) => c.type === 'Ready');
      const ready = condition?.status === 'True';
      const beat = condition?.lastHeartbeatTime ? Date.parse(condition.lastHeartbeatTime) : Number.NaN;
      if (!Number.isNaN(beat) && beat !== entry.statusHeartbeats.at(-1)) entry.statusHeartbeats.push(beat);
      if (ready && entry.readyAt === undefined) entry.readyAt = Date.now();
      if (entry.ready && !ready) {
        entry.leftReady++;
        log(`${name} left Ready: ${JSON.stringify(condition)}`);
      }
      entry.ready = ready;
    },
    log,
  );

  // Hand-overs: the heartbeat lock's fencing epoch grows by one with each new holder.
  const handovers: number[] = [];
  let epoch = 0;
  const lockPoll = setInterval(() => {
    table.get(lockKey(HEARTBEAT_LOCK)).then(
      (item) => {
        const e = typeof item?.epoch === 'number' ? item.epoch : 0;
        if (e > epoch) {
          // Read well before the new holder's first lock renewal (a third of the lock TTL),
          // so updatedAt is still the moment of the takeover.
          const at = typeof item?.updatedAt === 'string' ? Date.parse(item.updatedAt) : Number.NaN;
          if (epoch > 0) handovers.push(Number.isNaN(at) ? Date.now() : at);
          epoch = e;
        }
      },
      () => undefined,
    );
  }, LOCK_POLL_MS);

  const invocations: Record<string, number> = {};
  const onResult = (_: unknown, result: InvocationResult) => {
    // middy answers with a TimeoutError just before the deadline when the handler has not returned.
    const pastDeadline =
      result.status === 'error' && (result.error as Error | undefined)?.name === 'TimeoutError';
    const key = pastDeadline
      ? 'past deadline'
      : result.status === 'ok'
        ? `${(result.result as { role?: string; trigger?: string }).role ?? (result.result as { trigger?: string }).trigger} ok`
        : result.status;
    invocations[key] = (invocations[key] ?? 0) + 1;
    if (result.status === 'error' || result.status === 'timeout')
      log(`invocation ${result.status}: ${String(result.error)}`);
  };
  const pending = new Set<Promise<unknown>>();
  let start: () => { stop(): Promise<void> };
  if (spec.cadence === 'tick') {
    const deployment = new LocalDeployment({
      env: { ...env, SVK_TICK_PARTS: spec.parts.join(',') },
      cadence: 'tick',
      rateMs: RATE_MS,
      onResult,
    });
    start = () => {
      deployment.start();
      return { stop: () => deployment.stop({ abortRunning: true }) };
    };
  } else {
    const runtime = new LocalLambdaRuntime({ onResult });
    // The real handler; tracked only so that clean-up waits for invocations that were told to stop.
    const handler = createHeartbeatHandler(env);
    runtime.register({
      name: 'heartbeat',
      timeoutMs: TIMEOUT_MS,
      handler: (event: never, context: Context) => {
        const running = handler(event, context);
        pending.add(running);
        void running.catch(() => undefined).finally(() => pending.delete(running));
        return running;
      },
    });
    start = () => {
      const schedule = runtime.schedule('heartbeat', { rateMs: RATE_MS, startImmediately: true });
      return {
        stop: async () => {
          schedule.stop();
          await runtime.stopAll({ abortRunning: true });
        },
      };
    };
  }

  recorder.take();
  let rssPeak = 0;
  let heapPeak = 0;
  const durationMs = minutes * 60_000;
  const cpuBefore = cpuSnapshot(envt.pids);
  const t0 = performance.now();
  const wallStart = Date.now();
  const running = start();
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    rssPeak = Math.max(rssPeak, m.rss);
    heapPeak = Math.max(heapPeak, m.heapUsed);
  }, 1_000);
  let lastProgress = t0;
  const progress = setInterval(() => {
    const now = performance.now();
    if (now - lastProgress < 30_000) return;
    lastProgress = now;
    const ready = [...nodes.values()].filter((n) => n.ready).length;
    const renewals = [...leases.values()].reduce((a, l) => a + l.renewals.length, 0);
    log(
      `${spec.label}: ${((now - t0) / 1000).toFixed(0)} s, ${ready}/${spec.nodes} Ready, ` +
        `${renewals} renewals seen, lock epoch ${epoch}, load ${loadavg()[0]?.toFixed(2)}`,
    );
  }, 1_000);

  let apiserverBefore = new Map<string, number>();
  let apiserverAfter = new Map<string, number>();
  let cpuAfter = cpuBefore;
  let tEnd = t0;
  try {
    await delay(WARMUP_MS, undefined, { signal: interrupted });
    apiserverBefore = await scrapeRequestTotals(admin.config, controlPlane.server);
    await delay(Math.max(0, t0 + durationMs - performance.now()), undefined, { signal: interrupted });
    tEnd = performance.now();
    cpuAfter = cpuSnapshot(envt.pids);
    apiserverAfter = await scrapeRequestTotals(admin.config, controlPlane.server);
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    clearInterval(lockPoll);
    await running.stop();
    // Aborted in process, a handler still finishes its in-flight requests (each bounded by 5 s).
    await Promise.race([Promise.allSettled([...pending]), delay(30_000)]);
    leaseWatch.stop();
    nodeWatch.stop();
  }
  const records = recorder.take();
  const wallEnd = wallStart + (tEnd - t0);

  // Renewal gaps, only of renewals inside the run.
  const gaps: number[] = [];
  let handoverGapMax = 0;
  let otherGapMax = 0;
  let renewals = 0;
  for (const { renewals: times } of leases.values()) {
    const inRun = times.filter((t) => t <= wallEnd);
    renewals += inRun.length;
    for (let i = 1; i < inRun.length; i++) {
      const prev = inRun[i - 1] ?? 0;
      const cur = inRun[i] ?? 0;
      const gap = cur - prev;
      gaps.push(gap);
      // The old holder released before the new one took over, so the new one wrote `cur`.
      const spansHandover = handovers.some((h) => h > prev && h <= cur);
      if (spansHandover) handoverGapMax = Math.max(handoverGapMax, gap);
      else otherGapMax = Math.max(otherGapMax, gap);
    }
  }
  gaps.sort((a, b) => a - b);

  // What the node lifecycle controller goes by: a lease renewal or a new status heartbeat.
  let signalGapMax = 0;
  for (const [name, entry] of nodes) {
    const times = [...(leases.get(name)?.renewals ?? []), ...entry.statusHeartbeats]
      .filter((t) => t <= wallEnd)
      .sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) {
      signalGapMax = Math.max(signalGapMax, (times[i] ?? 0) - (times[i - 1] ?? 0));
    }
  }

  const readyTimes = [...nodes.values()].map((n) => n.readyAt).filter((t): t is number => t !== undefined);
  const allReadyAt = readyTimes.length === spec.nodes ? Math.max(...readyTimes) : undefined;

  // Steady state: between the first and last hand-over seen, i.e. whole holder periods.
  const handoverPerf = handovers.map((h) => t0 + (h - wallStart));
  const [firstHandover] = handoverPerf;
  const lastHandover = handoverPerf.at(-1);
  const aligned = firstHandover !== undefined && lastHandover !== undefined && lastHandover > firstHandover;
  const steadyFrom = aligned ? firstHandover : t0 + WARMUP_MS;
  const steadyTo = aligned ? lastHandover : tEnd;

  const statusCodes: Record<string, number> = {};
  let failedRequests = 0;
  for (const r of records) {
    if (r.at >= tEnd) continue;
    const code = r.status === undefined ? 'none' : String(r.status);
    statusCodes[code] = (statusCodes[code] ?? 0) + 1;
    // 404 and 409 are answers the heartbeat expects (node or lease not there yet, conflicts).
    if (r.failed || r.status === undefined || r.status >= 500 || r.status === 429) failedRequests++;
  }
  const putLatencies = records
    .filter((r) => r.kind === 'lease PUT' && r.doneAt !== undefined && r.at < tEnd)
    .map((r) => (r.doneAt ?? 0) - r.at)
    .sort((a, b) => a - b);

  if (renewals > 0 && records.length === 0) {
    log('no request of the virtual kubelet identity was seen: the request counts below are wrong');
  }
  const apiserver = Object.fromEntries(diffTotals(apiserverAfter, apiserverBefore));
  const figures: RunFigures = {
    label: spec.label,
    cadence: spec.cadence,
    nodes: spec.nodes,
    maxParallel: spec.maxParallel,
    minutes,
    renewals,
    gaps: {
      count: gaps.length,
      p50: percentile(gaps, 50),
      p99: percentile(gaps, 99),
      max: gaps.at(-1) ?? Number.NaN,
      late: gaps.filter((g) => g > LATE_GAP_MS).length,
      overGrace: gaps.filter((g) => g >= GRACE_MS).length,
    },
    handoverGapMax,
    otherGapMax,
    signalGapMax,
    allReadyAfterS: allReadyAt === undefined ? undefined : (allReadyAt - wallStart) / 1000,
    readyNodes: readyTimes.length,
    leftReady: [...nodes.values()].reduce((a, n) => a + n.leftReady, 0),
    handoversAtS: handovers.map((h) => (h - wallStart) / 1000),
    steady: {
      fromS: (steadyFrom - t0) / 1000,
      toS: (steadyTo - t0) / 1000,
      aligned,
      counts: countKinds(
        records.filter((r) => r.part === 'heartbeat'),
        steadyFrom,
        steadyTo,
      ),
      byPart: countByPart(records, steadyFrom, steadyTo),
    },
    parts: spec.parts,
    total: countKinds(records, t0, tEnd),
    failedRequests,
    statusCodes,
    leasePutLatencyMs: { p50: percentile(putLatencies, 50), p99: percentile(putLatencies, 99) },
    newConnectionShare: (() => {
      const answered = records.filter((r) => r.reusedSocket !== undefined);
      return answered.filter((r) => !r.reusedSocket).length / Math.max(1, answered.length);
    })(),
    invocations,
    cpu: cpuPercent(cpuBefore, cpuAfter),
    rssPeakMb: rssPeak / 2 ** 20,
    heapPeakMb: heapPeak / 2 ** 20,
    crossCheck: {
      fromS: WARMUP_MS / 1000,
      toS: (tEnd - t0) / 1000,
      ours: countKinds(records, t0 + WARMUP_MS, tEnd),
      apiserver,
    },
  };
  await cleanUp(admin, selector, prefix);
  return figures;
}

/** Deletes the run's nodes and leases, so that the node lifecycle controller does not work on them during the next run. */
async function cleanUp(admin: ToolingClients, selector: string, prefix: string): Promise<void> {
  await admin.core.deleteCollectionNode({ labelSelector: selector }).catch((err: unknown) => {
    log(`deleting nodes ${selector}: ${String(err)}`);
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [nodeList, leaseList] = await Promise.all([
      admin.core.listNode({ labelSelector: selector }),
      admin.coordination.listNamespacedLease({ namespace: NODE_LEASE_NAMESPACE }),
    ]);
    const ours = leaseList.items.filter((l) => l.metadata?.name?.startsWith(prefix));
    if (nodeList.items.length === 0 && ours.length === 0) return;
    if (Date.now() > deadline) {
      log(`clean-up: ${nodeList.items.length} nodes and ${ours.length} leases left after 120 s`);
      return;
    }
    // The garbage collector deletes leases whose owner Node is gone; do not wait for it. Every
    // lease in this private cluster's kube-node-lease belongs to a benchmark run.
    if (nodeList.items.length === 0) {
      await admin.coordination
        .deleteCollectionNamespacedLease({ namespace: NODE_LEASE_NAMESPACE })
        .catch((err: unknown) => log(`deleting leases: ${String(err)}`));
    }
    await delay(1_000);
  }
}

// ---------------------------------------------------------------------------
// Report

const s = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : 'n/a');
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');

function table(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

function partsLabel(r: RunFigures): string {
  if (r.cadence === 'continuous') return 'heartbeat function';
  return r.parts.length === TICK_PART_NAMES.length ? 'all' : r.parts.join(', ');
}

function report(runs: readonly RunFigures[]): string {
  const perNodeMinute = (count: number, r: RunFigures, fromS: number, toS: number) =>
    count / r.nodes / ((toS - fromS) / 60);
  const renewalTable = table(
    [
      'cadence',
      'nodes',
      'max parallel',
      'renewals',
      'gap p50 (s)',
      'gap p99 (s)',
      'gap max (s)',
      'max at hand-over (s)',
      `gaps > ${LATE_GAP_MS / 1000} s`,
      `gaps >= ${GRACE_MS / 1000} s`,
      'max lease-or-status gap (s)',
      'holder past deadline',
      'left Ready',
      'all Ready after (s)',
      'hand-overs at (s)',
    ],
    runs.map((r) => [
      r.cadence,
      String(r.nodes),
      String(r.maxParallel),
      String(r.renewals),
      s(r.gaps.p50),
      s(r.gaps.p99),
      s(r.gaps.max),
      r.handoversAtS.length > 0 ? s(r.handoverGapMax) : 'none',
      String(r.gaps.late),
      String(r.gaps.overGrace),
      s(r.signalGapMax),
      String(r.invocations['past deadline'] ?? 0),
      String(r.leftReady),
      r.allReadyAfterS === undefined ? `never (${r.readyNodes}/${r.nodes})` : f1(r.allReadyAfterS),
      r.handoversAtS.map((h) => h.toFixed(0)).join(', ') || 'none',
    ]),
  );
  const requestTable = table(
    [
      'cadence',
      'nodes',
      'parts run',
      'window (s)',
      'total',
      'lease PUT',
      'lease GET',
      'node LIST',
      'node GET',
      'status PATCH',
      'other',
      `x target (${TARGET_PER_NODE_MINUTE})`,
    ],
    runs.map((r) => {
      const { fromS, toS, counts } = r.steady;
      const rate = (n: number) => f2(perNodeMinute(n, r, fromS, toS));
      const total = perNodeMinute(sum(counts), r, fromS, toS);
      return [
        r.cadence,
        String(r.nodes) + (r.maxParallel === DEFAULT_MAX_PARALLEL ? '' : ` @${r.maxParallel}`),
        partsLabel(r),
        `${fromS.toFixed(0)}-${toS.toFixed(0)}${r.steady.aligned || r.cadence === 'tick' ? '' : ' *'}`,
        f2(total),
        rate(counts['lease PUT']),
        rate(counts['lease GET']),
        rate(counts['node LIST']),
        rate(counts['node GET']),
        rate(counts['status PATCH']),
        rate(counts['lease POST'] + counts['node POST'] + counts.other),
        f2(total / TARGET_PER_NODE_MINUTE),
      ];
    }),
  );
  const partRows = runs.flatMap((r) => {
    const { fromS, toS, byPart } = r.steady;
    return Object.entries(byPart)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([part, counts]) => [
        r.label,
        part,
        f2(perNodeMinute(sum(counts), r, fromS, toS)),
        Object.entries(counts)
          .sort(([, a], [, b]) => b - a)
          .map(([verb, n]) => `${verb} ${f2(perNodeMinute(n, r, fromS, toS))}`)
          .join(', '),
      ]);
  });
  const partTable = table(['run', 'part', 'total', 'by verb and resource'], partRows);
  const costTable = table(
    [
      'run',
      'requests (run)',
      'failed (no answer, 5xx, 429)',
      'lease PUT latency p50/p99 (ms)',
      'on a new connection',
      'bench CPU %',
      'bench RSS peak (MB)',
      'kube-apiserver CPU %',
      'etcd CPU %',
      'controller-manager CPU %',
      'DynamoDB Local CPU %',
      'machine busy % (of 200)',
      'of which others %',
    ],
    runs.map((r) => [
      r.label,
      String(sum(r.total)),
      String(r.failedRequests),
      `${f1(r.leasePutLatencyMs.p50)} / ${f1(r.leasePutLatencyMs.p99)}`,
      `${(r.newConnectionShare * 100).toFixed(0)} %`,
      f1(r.cpu.bench ?? Number.NaN),
      f1(r.rssPeakMb),
      f1(r.cpu['kube-apiserver'] ?? Number.NaN),
      f1(r.cpu.etcd ?? Number.NaN),
      f1(r.cpu['kube-controller-manager'] ?? Number.NaN),
      f1(r.cpu['dynamodb-local'] ?? Number.NaN),
      f1(r.cpu.machine ?? Number.NaN),
      f1(r.cpu.others ?? Number.NaN),
    ]),
  );
  const crossRows: string[][] = [];
  for (const r of runs) {
    const mapped = new Set<string>();
    for (const kind of REQUEST_KINDS) {
      const series = APISERVER_SERIES[kind];
      for (const key of series) mapped.add(key);
      const theirs = series.reduce((a, key) => a + (r.crossCheck.apiserver[key] ?? 0), 0);
      if (r.crossCheck.ours[kind] === 0 && theirs === 0) continue;
      crossRows.push([
        r.label,
        kind,
        String(r.crossCheck.ours[kind]),
        series.join(' + ') || '-',
        String(theirs),
      ]);
    }
    for (const [key, value] of Object.entries(r.crossCheck.apiserver)) {
      if (!mapped.has(key)) crossRows.push([r.label, '(not ours)', '-', key, String(value)]);
    }
  }
  const crossTable = table(['run', 'our request', 'ours', 'apiserver_request_total', 'apiserver'], crossRows);
  const invocationLines = runs.map(
    (r) =>
      `- ${r.label}: ${Object.entries(r.invocations)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ')} (the runs end by crashing the invocations still running); ` +
      `status codes ${JSON.stringify(r.statusCodes)}; bench heap peak ${f1(r.heapPeakMb)} MB`,
  );
  return [
    '### Lease renewals (watch on kube-node-lease; gap = consecutive renewTimes of one lease)',
    '',
    renewalTable,
    '',
    '### Kubernetes API requests per node-minute (steady state)',
    '',
    requestTable,
    '',
    '`*`: fewer than two hand-overs seen, so the window is [60 s, end] instead of whole holder periods (tick: always [60 s, end], there are no hand-overs).',
    '',
    '### Requests per node-minute by the part that sent them (same window)',
    '',
    partTable,
    '',
    '### Cost (averages over the whole run; CPU in % of one core)',
    '',
    costTable,
    '',
    `### Cross-check with kube-apiserver (window [${WARMUP_MS / 1000} s, end]; the apiserver counts every client)`,
    '',
    crossTable,
    '',
    '### Invocations',
    '',
    ...invocationLines,
  ].join('\n');
}

// ---------------------------------------------------------------------------
// Main

/** Aborted by SIGINT/SIGTERM: the run in progress stops and everything is torn down. */
const interrupt = new AbortController();

async function main(): Promise<void> {
  const { runs, minutes } = parseOptions(process.argv.slice(2));
  attributeTickParts();
  const stops: Array<() => Promise<void>> = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () => {
    stopping ??= (async () => {
      for (const stop of stops.reverse()) await stop().catch((err: unknown) => log(`stop: ${String(err)}`));
    })();
    return stopping;
  };
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping`);
    interrupt.abort(new Error(signal));
    // A second signal does not wait for the clean-up.
    process.once(signal, () => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    mkdirSync(benchDir, { recursive: true });
    const started = Date.now();
    const [controlPlane, dynamo] = await Promise.all([
      // A directory of its own, so that two runs (two --parts) can go side by side.
      startControlPlane({ dir: join(benchDir, `control-plane-${process.pid}`), log }).then((cp) => {
        stops.push(() => cp.stop());
        return cp;
      }),
      startDynamoDbLocal({ inMemory: true, log }).then((db) => {
        stops.push(() => db.stop());
        return db;
      }),
    ]);
    log(`environment ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    interrupt.signal.throwIfAborted();

    const kubelet = await loadKubeConfig({ kubeconfigPath: controlPlane.kubeletKubeconfig });
    const token = kubelet.token;
    if (!token) throw new Error('the kubelet kubeconfig has no token');
    const pids = new Map<string, number>([['dynamodb-local', dynamo.pid]]);
    for (const name of ['kube-apiserver', 'etcd', 'kube-controller-manager', 'kube-scheduler']) {
      pids.set(name, Number(readFileSync(join(controlPlane.dir, 'pids', `${name}.pid`), 'utf8')));
    }
    const envt: Environment = {
      controlPlane,
      dynamo,
      // Deleting a thousand nodes in one request takes longer than the default 5 s bound.
      admin: createToolingClients(controlPlane.adminKubeconfig, {
        requestTimeoutMs: 120_000,
      }),
      recorder: new RequestRecorder(`Bearer ${token}`),
      pids,
      interrupted: interrupt.signal,
    };

    const results: RunFigures[] = [];
    for (const spec of runs) {
      log(
        `run ${spec.label}: ${spec.cadence}, ${spec.nodes} nodes, max parallel ${spec.maxParallel}, ${minutes} min`,
      );
      const figures = await runOnce(envt, spec, minutes);
      results.push(figures);
      log(
        `run ${spec.label} done: gap p50/p99/max ${s(figures.gaps.p50)}/${s(figures.gaps.p99)}/` +
          `${s(figures.gaps.max)} s, ${figures.leftReady} left Ready`,
      );
    }
    const output = report(results);
    const file = join(benchDir, `heartbeat-${new Date().toISOString().replaceAll(':', '-')}.json`);
    writeFileSync(file, JSON.stringify({ argv: process.argv.slice(2), results }, null, 2));
    process.stdout.write(`\n${output}\n\nraw figures: ${file}\n`);
  } finally {
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    if (interrupt.signal.aborted) {
      log('interrupted: everything started was stopped');
      process.exit(130);
    }
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
