/**
 * Idle cost benchmark: what a deployment costs a month with no pod, at each
 * cadence, from measured usage of the real functions at production cadence
 * in the local runtime, priced at the list prices of lib/cost/prices.ts.
 *
 * Usage: npx tsx bench/idle-cost.ts [--minutes 10] [--nodes 1,10] [--cadence tick,continuous]
 *          [--crashes 3] [--pods 3] [--write-figures bench/figures/idle-cost.json]
 *        npx tsx bench/idle-cost.ts --from <raw.json>,<raw.json> [--write-figures ...]
 *
 * For each cadence and node count, a deployment of its own (fresh table,
 * nodes `idle-<label>-<i>`) runs as LocalDeployment runs it (serverless.yml's
 * cadence, schedules, timeouts, queue; SVK_LOG_LEVEL=info and SVK_METRICS=emf
 * as deployed) for a minute of warm-up and then `--minutes` measured:
 * - invocations per function with their wall time and this process's CPU
 *   time while each ran; Lambda's bill is modelled from them: the wall time
 *   with the CPU part stretched to the function's memory share of a vCPU
 *   (tick: 256 MB is 14 % of one), the continuous functions' wall time as it is;
 * - DynamoDB request units through a counting proxy (bench/dynamo-proxy.ts);
 * - Kubernetes API requests of the virtual kubelet's identity;
 * - SQS requests of the tick chain (sends, deletes, the keeper's counts)
 *   and, modelled, the receives of Lambda's event source mapping;
 * - EventBridge entries, and the bytes the functions log (stdout).
 * Then, at the first node count: `--crashes` invocations killed as they
 * start (the tick, or the continuous heartbeat's holder) with the lease
 * renewal gap around each (the node lifecycle controller's grace is 40 s),
 * and `--pods` pods created at idle with their time from bound to Running
 * (the trade-off of the tick: up to one tick).
 * The base and per-node rates come from the two smallest node counts;
 * --write-figures writes them for `npm run cost-model`. --from reports (and
 * writes figures) from the raw files of earlier runs without running
 * anything: the two cadences measured by two processes side by side, each
 * with its own window.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { type CostFigures, idleCost, parseCostFigures, type UsageRates } from '../lib/cost/cost-model.ts';
import {
  MEMORY_PER_VCPU_MB,
  PLATFORM_LOG_BYTES_PER_INVOCATION,
  SQS_EVENT_SOURCE_POLLERS,
  SQS_LONG_POLL_SECONDS,
} from '../lib/cost/prices.ts';
import { loadKubeConfig } from '../lib/kube/client.ts';
import { createToolingClients, type ToolingClients } from '../lib/kube/tooling-clients.ts';
import type { Cadence } from '../lib/local/cadence.ts';
import { currentInvocation } from '../lib/local/invocation-scope.ts';
import type { Invocation, InvocationResult } from '../lib/local/lambda-runtime.ts';
import { LocalDeployment } from '../lib/local/local-deployment.ts';
import { lockKey } from '../lib/lock/dynamodb-lock-store.ts';
import { NODE_LEASE_NAMESPACE } from '../lib/node/node-lease.ts';
import { StateTable } from '../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import { type DynamoProxy, startDynamoProxy } from './dynamo-proxy.ts';
import {
  type BenchEnvironment,
  benchLog,
  bump,
  fixed,
  HttpRequestCounter,
  headerValue,
  interruptSignal,
  kubeRequestKind,
  machineBusySeconds,
  machineSummary,
  markdownTable,
  resumingWatch,
  startBenchEnvironment,
} from './support.ts';
import { attributeTickParts, currentTickPart } from './tick-part-scope.ts';

const log = benchLog('idle-cost');
const root = new URL('..', import.meta.url).pathname;
const benchDir = join(root, '.local', 'bench-idle');
const WARMUP_MS = 60_000;
/** Memory of each function as serverless.yml deploys it. */
const MEMORY_MB: Record<string, number> = {
  tick: 256,
  heartbeat: 512,
  'pod-watch': 512,
  'pod-status': 512,
  reconcile: 512,
  'pod-sync': 256,
};

interface Options {
  minutes: number;
  nodes: number[];
  cadences: Cadence[];
  crashes: number;
  pods: number;
  writeFigures?: string;
  /** Raw result files of earlier runs to report from instead of running. */
  from?: string[];
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: 'string', default: '10' },
      nodes: { type: 'string', default: '1,10' },
      cadence: { type: 'string', default: 'tick,continuous' },
      crashes: { type: 'string', default: '3' },
      pods: { type: 'string', default: '3' },
      'write-figures': { type: 'string' },
      from: { type: 'string' },
    },
  });
  const minutes = Number(values.minutes);
  if (!(minutes >= 1)) throw new Error(`--minutes: "${values.minutes}" is not a number of minutes >= 1`);
  const nodes = values.nodes.split(',').map(Number);
  if (nodes.length < 2 || nodes.some((n) => !(Number.isInteger(n) && n >= 1)) || nodes[0] === nodes[1]) {
    throw new Error('--nodes: at least two different whole numbers (the base and the per-node rate)');
  }
  const cadences = values.cadence.split(',').map((c) => c.trim());
  for (const c of cadences) if (c !== 'tick' && c !== 'continuous') throw new Error(`--cadence: "${c}"`);
  const crashes = Number(values.crashes);
  const pods = Number(values.pods);
  if (!(Number.isInteger(crashes) && crashes >= 0)) throw new Error('--crashes: a whole number');
  if (!(Number.isInteger(pods) && pods >= 0)) throw new Error('--pods: a whole number');
  return {
    minutes,
    nodes,
    cadences: cadences as Cadence[],
    crashes,
    pods,
    ...(values['write-figures'] ? { writeFigures: values['write-figures'] } : {}),
    ...(values.from ? { from: values.from.split(',').map((f) => f.trim()) } : {}),
  };
}

// ---------------------------------------------------------------------------
// What the functions do, recorded from outside

interface InvocationRecord {
  fn: string;
  start: number;
  cpuAtStart: NodeJS.CpuUsage;
  end?: number;
  /** This process's CPU time (ms) while the invocation ran. */
  cpuMs?: number;
  status?: string;
  /** A tick's time per part (TickRunResult.partMs). */
  partMs?: Record<string, number>;
}

/** The bytes the functions write to stdout (their log lines and EMF metrics), by function. */
class LogCounter {
  readonly bytes = new Map<string, number>();
  readonly #original = process.stdout.write.bind(process.stdout);

  /** Replaces stdout's write (before any logger is built, so pino writes through it). */
  install(): void {
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const fn = /"function_name":"([^"]+)"/.exec(text)?.[1] ?? currentInvocation()?.functionName ?? 'bench';
      bump(this.bytes, fn, Buffer.byteLength(text));
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }) as typeof process.stdout.write;
  }

  print(text: string): void {
    this.#original(text);
  }
}

interface Environment {
  bench: BenchEnvironment;
  proxy: DynamoProxy;
  admin: ToolingClients;
  kube: HttpRequestCounter;
  logs: LogCounter;
  interrupted: AbortSignal;
}

/** Per minute of the measured window. */
interface RunRates {
  invocations: Record<string, number>;
  /** Lambda GB-seconds, modelled from wall and CPU time at each function's memory. */
  gbSeconds: Record<string, number>;
  /** Mean wall and CPU ms per invocation, by function. */
  wallMs: Record<string, number>;
  cpuMs: Record<string, number>;
  billedMs: Record<string, number>;
  dynamo: Record<string, number>;
  writeUnits: number;
  readUnits: number;
  kube: Record<string, number>;
  sqs: Record<string, number>;
  eventBridgeEntries: number;
  scheduledInvocations: number;
  logBytes: Record<string, number>;
  /** Mean time of each tick part (ms), over the ticks that ran it. */
  tickPartMs: Record<string, number>;
}

/** The next invocation `pick` accepts is killed as it starts; `at` says when (epoch ms). */
interface CrashRequest {
  pick?: (fn: string) => boolean;
  at?: number;
}

interface CrashGap {
  killedAt: number;
  /** The longest time between two renewals of a lease around the kill (ms). */
  gapMs: number;
  leftReady: boolean;
}

interface RunResult {
  cadence: Cadence;
  nodes: number;
  minutes: number;
  rates: RunRates;
  usage: UsageRates;
  /** Load average and CPU busy (of 200 %) of the machine during the window. */
  load: { avg1: number; busyPercent: number };
  crashes: CrashGap[];
  /** Pods created at idle: bound to Running (ms). */
  podLatencies: number[];
}

/** Billed ms of one invocation at `memoryMb`: the CPU part stretched to Lambda's share of a vCPU. */
export function billedMs(wallMs: number, cpuMs: number, memoryMb: number): number {
  const cpu = Math.min(cpuMs, wallMs);
  return Math.ceil(wallMs - cpu + cpu * Math.max(1, MEMORY_PER_VCPU_MB / memoryMb));
}

async function runOnce(
  envt: Environment,
  cadence: Cadence,
  nodes: number,
  options: Options,
  extras: boolean,
): Promise<RunResult> {
  const { bench, proxy, admin, kube, interrupted } = envt;
  const label = `${cadence[0]}${nodes}`;
  const tableName = `svk-idle-${label}-${Date.now().toString(36)}`;
  const { client, doc } = createDynamoDbClient({ endpoint: bench.dynamo.endpoint, region: 'local' });
  await createTable(client, tableName);
  const table = new StateTable(doc, tableName);
  const names = Array.from({ length: nodes }, (_, i) => `idle-${label}-${i}`);
  const env = {
    SVK_KUBECONFIG: bench.controlPlane.kubeletKubeconfig,
    SVK_DYNAMODB_ENDPOINT: proxy.endpoint,
    AWS_REGION: 'local',
    SVK_TABLE_NAME: tableName,
    // Measures the control loop, not a provider.
    SVK_PROVIDER: 'mock',
    SVK_LOG_LEVEL: 'info',
    SVK_METRICS: 'emf',
    SVK_DEPLOYMENT_NAME: `idle-${label}`,
    SVK_NODE_NAMES: names.join(','),
    SVK_NODE_LABELS: `svk-idle=${label}`,
  };

  const records: InvocationRecord[] = [];
  const byRequest = new Map<string, InvocationRecord>();
  const deployment = new LocalDeployment({
    env,
    cadence,
    onResult: (invocation: Invocation, result: InvocationResult) => {
      const r = byRequest.get(invocation.requestId);
      if (!r) return;
      byRequest.delete(invocation.requestId);
      r.end = performance.now();
      r.cpuMs = cpuMsSince(r.cpuAtStart);
      r.status = result.status;
      if (result.status === 'ok' && invocation.functionName === 'tick') {
        const partMs = (result.result as { partMs?: Record<string, number> }).partMs;
        if (partMs) r.partMs = partMs;
      }
    },
  });
  // Every invocation goes through the runtime's invoke (schedules, the event source, the bus).
  const runtime = deployment.runtime;
  const invoke = runtime.invoke.bind(runtime);
  const crashes: CrashRequest = {};
  runtime.invoke = (name, event, invokeOptions = {}) => {
    const crash = crashes.pick?.(name) ?? false;
    if (crash) {
      crashes.pick = undefined;
      crashes.at = Date.now();
    }
    const inv = invoke(name, event, crash ? { ...invokeOptions, crashAfterMs: 0 } : invokeOptions);
    const r: InvocationRecord = { fn: name, start: performance.now(), cpuAtStart: process.cpuUsage() };
    byRequest.set(inv.requestId, r);
    records.push(r);
    return inv;
  };
  let entries = 0;
  const putEvents = deployment.bus.putEvents.bind(deployment.bus);
  deployment.bus.putEvents = (input) => {
    entries += input?.length ?? 0;
    return putEvents(input);
  };

  const renewals = new Map<string, number[]>();
  const leaseWatch = await resumingWatch(
    admin.config,
    `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`,
    {},
    (type, object) => {
      const lease = object as { metadata?: { name?: string }; spec?: { renewTime?: string } };
      const name = lease.metadata?.name;
      if (!name || !names.includes(name) || type === 'DELETED' || !lease.spec?.renewTime) return;
      const times = renewals.get(name) ?? [];
      const t = Date.parse(lease.spec.renewTime);
      if (times.at(-1) !== t) times.push(t);
      renewals.set(name, times);
    },
    log,
  );
  const readyChanges: Array<{ at: number; name: string; ready: boolean }> = [];
  const nodeWatch = await resumingWatch(
    admin.config,
    '/api/v1/nodes',
    { labelSelector: `svk-idle=${label}` },
    (_type, object) => {
      const node = object as {
        metadata?: { name?: string };
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      const name = node.metadata?.name ?? '';
      const last = [...readyChanges].reverse().find((c) => c.name === name);
      if (last?.ready !== ready) readyChanges.push({ at: Date.now(), name, ready });
    },
    log,
  );

  const sqs = deployment.tickChain?.queue.requests;
  deployment.start();
  log(`${label}: started (${cadence}, ${nodes} nodes); warming up ${WARMUP_MS / 1000} s`);
  let result: RunResult;
  try {
    await delay(WARMUP_MS, undefined, { signal: interrupted });
    const from = performance.now();
    const kubeBefore = kube.snapshot();
    const logsBefore = new Map(envt.logs.bytes);
    const proxyFrom = proxy.calls.length;
    const entriesBefore = entries;
    const sqsFrom = { ...(sqs ?? {}) };
    const busyBefore = machineBusySeconds();
    const windowMs = options.minutes * 60_000;
    for (let done = 0; done < windowMs; done += 60_000) {
      await delay(Math.min(60_000, windowMs - done), undefined, { signal: interrupted });
      log(
        `${label}: ${((done + 60_000) / 60_000).toFixed(0)}/${options.minutes} min, load ${loadavg()[0]?.toFixed(1)}`,
      );
    }
    const to = performance.now();
    const minutes = (to - from) / 60_000;
    const rates = measureRates({
      records,
      from,
      to,
      minutes,
      kube: diffMaps(kube.snapshot(), kubeBefore),
      logs: diffMaps(envt.logs.bytes, logsBefore),
      dynamo: proxy.calls.slice(proxyFrom),
      entries: entries - entriesBefore,
      sqs: Object.fromEntries(
        Object.entries(sqs ?? {}).map(([k, v]) => [k, v - ((sqsFrom as Record<string, number>)[k] ?? 0)]),
      ),
      cadence,
    });
    const busy = ((machineBusySeconds() - busyBefore) / ((to - from) / 1000)) * 100;
    result = {
      cadence,
      nodes,
      minutes,
      rates,
      usage: usageOf(rates, cadence),
      load: { avg1: loadavg()[0] ?? Number.NaN, busyPercent: busy },
      crashes: [],
      podLatencies: [],
    };
    if (extras) {
      const watched = { renewals, readyChanges };
      for (let i = 0; i < options.crashes; i++) {
        result.crashes.push(await killOne(deployment, table, cadence, crashes, watched, interrupted));
      }
      result.podLatencies = await measurePods(admin, label, names[0] ?? '', options.pods, interrupted);
    }
  } finally {
    await deployment.stop({ abortRunning: true });
    leaseWatch.stop();
    nodeWatch.stop();
    await cleanUp(admin, `svk-idle=${label}`);
  }
  return result;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

function diffMaps(
  after: ReadonlyMap<string, number>,
  before: ReadonlyMap<string, number>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

/** Everything per minute of [from, to]; an invocation counts with the part of it inside the window. */
function measureRates(m: {
  records: InvocationRecord[];
  from: number;
  to: number;
  minutes: number;
  kube: Map<string, number>;
  logs: Map<string, number>;
  dynamo: DynamoProxy['calls'];
  entries: number;
  sqs: Record<string, number>;
  cadence: Cadence;
}): RunRates {
  const per = (n: number) => n / m.minutes;
  const invocations: Record<string, number> = {};
  const gbSeconds: Record<string, number> = {};
  const wall: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  const billed: Record<string, number> = {};
  for (const r of m.records) {
    const end = r.end ?? m.to;
    const overlap = Math.min(end, m.to) - Math.max(r.start, m.from);
    if (overlap <= 0) continue;
    const whole = Math.max(1, end - r.start);
    const share = overlap / whole;
    const memory = MEMORY_MB[r.fn] ?? 256;
    const cpuMs = r.cpuMs ?? 0;
    // Long invocations are waiting, not computing: their CPU share is what the process did meanwhile.
    const b = r.fn === 'tick' || r.fn === 'pod-sync' ? billedMs(whole, cpuMs, memory) : whole;
    invocations[r.fn] = (invocations[r.fn] ?? 0) + per(share);
    wall[r.fn] = (wall[r.fn] ?? 0) + whole * share;
    cpu[r.fn] = (cpu[r.fn] ?? 0) + cpuMs * share;
    billed[r.fn] = (billed[r.fn] ?? 0) + b * share;
    gbSeconds[r.fn] = (gbSeconds[r.fn] ?? 0) + per(((b * share) / 1000) * (memory / 1024));
  }
  const partTotals = new Map<string, { ms: number; n: number }>();
  for (const r of m.records) {
    if (!r.partMs || r.start < m.from || (r.end ?? m.to) > m.to) continue;
    for (const [part, ms] of Object.entries(r.partMs)) {
      const t = partTotals.get(part) ?? { ms: 0, n: 0 };
      t.ms += ms;
      t.n++;
      partTotals.set(part, t);
    }
  }
  const mean = (totals: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(totals).map(([fn, t]) => [fn, t / Math.max(1e-9, (invocations[fn] ?? 0) * m.minutes)]),
    );
  const dynamo: Record<string, number> = {};
  let writeUnits = 0;
  let readUnits = 0;
  for (const call of m.dynamo) {
    dynamo[call.operation] = (dynamo[call.operation] ?? 0) + per(1);
    writeUnits += call.writeUnits;
    readUnits += call.readUnits;
  }
  // The schedules: the keeper once a minute (tick), or four functions once a minute (continuous).
  const scheduled = m.cadence === 'tick' ? 1 : 4;
  return {
    invocations,
    gbSeconds,
    wallMs: mean(wall),
    cpuMs: mean(cpu),
    billedMs: mean(billed),
    dynamo,
    writeUnits: per(writeUnits),
    readUnits: per(readUnits),
    kube: Object.fromEntries([...m.kube].map(([k, v]) => [k, per(v)])),
    sqs: Object.fromEntries(Object.entries(m.sqs).map(([k, v]) => [k, per(v)])),
    eventBridgeEntries: per(m.entries),
    scheduledInvocations: scheduled,
    logBytes: Object.fromEntries([...m.logs].map(([k, v]) => [k, per(v)])),
    tickPartMs: Object.fromEntries([...partTotals].map(([k, t]) => [k, t.ms / t.n])),
  };
}

/** The usage the cost model prices, per minute: the SQS event source mapping's receives modelled. */
function usageOf(r: RunRates, cadence: Cadence): UsageRates {
  const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
  const invocations = sum(r.invocations);
  const sqsLocal = sum(r.sqs);
  // Locally one poller receives; Lambda's pollers each long-poll every 20 s besides the receives that find a tick.
  const sqsReceivesModelled =
    cadence === 'tick'
      ? SQS_EVENT_SOURCE_POLLERS * (60 / SQS_LONG_POLL_SECONDS) + (r.invocations.tick ?? 0)
      : 0;
  const sqs = cadence === 'tick' ? sqsLocal - (r.sqs.ReceiveMessage ?? 0) + sqsReceivesModelled : 0;
  return {
    invocations,
    gbSeconds: sum(r.gbSeconds),
    dynamoWriteUnits: r.writeUnits,
    dynamoReadUnits: r.readUnits,
    sqsRequests: sqs,
    eventBridgeEvents: r.eventBridgeEntries,
    scheduledInvocations: r.scheduledInvocations,
    logBytes: sum(r.logBytes) + invocations * PLATFORM_LOG_BYTES_PER_INVOCATION,
    kubeRequests: sum(r.kube),
  };
}

// ---------------------------------------------------------------------------
// Kills and pods at idle

interface Watched {
  renewals: Map<string, number[]>;
  readyChanges: Array<{ at: number; name: string; ready: boolean }>;
}

/** After a kill, the renewals are looked at for this long: past the lease's 40 s grace. */
const AFTER_KILL_MS = 45_000;

/**
 * Kills one invocation as it starts: the next tick (it renews nothing; the
 * queue delivers its message again after the visibility timeout), or the
 * continuous heartbeat's lock holder (a standby takes the lock over after one
 * lock TTL). Returns the longest renewal gap of a lease around the kill.
 */
async function killOne(
  deployment: LocalDeployment,
  table: StateTable,
  cadence: Cadence,
  crashes: CrashRequest,
  watched: Watched,
  interrupted: AbortSignal,
): Promise<CrashGap> {
  // Kills land at different points of the cycle.
  await delay(5_000 + Math.random() * 10_000, undefined, { signal: interrupted });
  let killedAt: number;
  if (cadence === 'tick') {
    crashes.at = undefined;
    crashes.pick = (fn) => fn === 'tick';
    while (crashes.at === undefined) await delay(50, undefined, { signal: interrupted });
    killedAt = crashes.at;
  } else {
    for (;;) {
      const owner = String((await table.get(lockKey('heartbeat')))?.owner ?? '');
      const holder = deployment.runtime.running('heartbeat').find((i) => owner.startsWith(`${i.requestId}/`));
      if (holder) {
        holder.crash('killed by the benchmark');
        killedAt = Date.now();
        break;
      }
      await delay(200, undefined, { signal: interrupted });
    }
  }
  log(`killed a ${cadence === 'tick' ? 'tick' : 'heartbeat holder'} at ${new Date(killedAt).toISOString()}`);
  await delay(AFTER_KILL_MS, undefined, { signal: interrupted });
  let gapMs = 0;
  for (const times of watched.renewals.values()) {
    for (let i = 1; i < times.length; i++) {
      const prev = times[i - 1] ?? 0;
      const cur = times[i] ?? 0;
      if (cur >= killedAt && prev <= killedAt + AFTER_KILL_MS) gapMs = Math.max(gapMs, cur - prev);
    }
  }
  const leftReady = watched.readyChanges.some(
    (c) => !c.ready && c.at >= killedAt && c.at <= killedAt + AFTER_KILL_MS,
  );
  return { killedAt, gapMs, leftReady };
}

/** Creates pods bound to `node` at random moments of an idle deployment; returns each one's bound to Running (ms). */
async function measurePods(
  admin: ToolingClients,
  label: string,
  node: string,
  count: number,
  interrupted: AbortSignal,
): Promise<number[]> {
  if (count === 0) return [];
  const namespace = `idle-pods-${label}-${Date.now().toString(36)}`;
  await admin.core.createNamespace({ body: { metadata: { name: namespace } } });
  const latencies: number[] = [];
  try {
    // 1.20 refuses pods until the namespace's default service account has its token.
    for (;;) {
      const sa = await admin.core
        .readNamespacedServiceAccount({ name: 'default', namespace })
        .catch(() => undefined);
      if ((sa?.secrets?.length ?? 0) > 0) break;
      await delay(500, undefined, { signal: interrupted });
    }
    for (let i = 0; i < count; i++) {
      await delay(5_000 + Math.random() * 15_000, undefined, { signal: interrupted });
      const created = await admin.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: `idle-${i}` },
          spec: {
            nodeName: node,
            tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
            containers: [{ name: 'app', image: 'registry.example/app:1' }],
          },
        },
      });
      const bound = Date.parse(String(created.metadata?.creationTimestamp ?? new Date().toISOString()));
      const startedAt = Date.now();
      for (;;) {
        const pod = await admin.core.readNamespacedPod({ namespace, name: `idle-${i}` });
        if (pod.status?.phase === 'Running') {
          // creationTimestamp has whole seconds: measure from whichever is later.
          latencies.push(Date.now() - Math.max(bound, startedAt));
          break;
        }
        if (Date.now() - startedAt > 120_000) {
          log(`pod idle-${i} not Running after 120 s`);
          break;
        }
        await delay(100, undefined, { signal: interrupted });
      }
    }
  } finally {
    await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
  return latencies;
}

/** Deletes the run's nodes (the garbage collector takes their leases), so that the next run is alone. */
async function cleanUp(admin: ToolingClients, selector: string): Promise<void> {
  await admin.core.deleteCollectionNode({ labelSelector: selector }).catch((err: unknown) => {
    log(`deleting nodes ${selector}: ${String(err)}`);
  });
}

// ---------------------------------------------------------------------------
// Figures and report

/** Linear in the nodes: the rates of two runs give a deployment's base and each node's share. */
function fit(a: RunResult, b: RunResult): { base: UsageRates; perNode: UsageRates } {
  const base = { ...a.usage };
  const perNode = { ...a.usage };
  for (const key of Object.keys(base) as Array<keyof UsageRates>) {
    const slope = Math.max(0, (b.usage[key] - a.usage[key]) / (b.nodes - a.nodes));
    perNode[key] = slope;
    base[key] = Math.max(0, a.usage[key] - slope * a.nodes);
  }
  return { base, perNode };
}

/**
 * A pod's whole life, from docs/benchmarks.md (Pods, "100 to 10,000 pods",
 * 2026-11-27: 3 pod-sync invocations and 3 events, 7 API requests and 5
 * DynamoDB requests per pod, 3 writes and 2 strongly consistent reads), with
 * 300 ms per pod-sync invocation at 256 MB.
 */
const POD_LIFE = {
  invocations: 3,
  gbSeconds: 0.225, // 3 invocations of 0.3 s at 0.25 GB
  dynamoWriteUnits: 3,
  dynamoReadUnits: 2,
  eventBridgeEvents: 3,
  logBytes: 3 * (PLATFORM_LOG_BYTES_PER_INVOCATION + 600),
  kubeRequests: 7,
  source:
    'docs/benchmarks.md, Pods, "100 to 10,000 pods" (2026-11-27): 3 pod-sync invocations and 3 events, 7 API requests, 5 DynamoDB requests (3 writes: claim, completion, forget; 2 strongly consistent reads) per pod; 300 ms per invocation at 256 MB and the log bytes of 2026-11-21 scaled to 3 invocations',
};

function figuresOf(runs: RunResult[], cadences: Cadence[], command: string): CostFigures {
  const byCadence = (c: Cadence) => runs.filter((r) => r.cadence === c).sort((a, b) => a.nodes - b.nodes);
  const cadence = (c: Cadence) => {
    const [a, b] = byCadence(c);
    if (!a || !b) throw new Error(`no two runs of ${c}`);
    return {
      ...fit(a, b),
      maxNodesPerDeployment: 250,
      memoryMb: Object.fromEntries(
        (c === 'tick'
          ? ['tick', 'pod-sync']
          : ['heartbeat', 'pod-watch', 'pod-status', 'reconcile', 'pod-sync']
        ).map((fn) => [fn, MEMORY_MB[fn] ?? 256]),
      ),
    };
  };
  const missing = (['tick', 'continuous'] as const).filter((c) => !cadences.includes(c));
  if (missing.length > 0)
    throw new Error(`--write-figures needs both cadences (missing ${missing.join(', ')})`);
  return parseCostFigures({
    measured: { at: new Date().toISOString(), machine: machineSummary(), command },
    cadences: { tick: cadence('tick'), continuous: cadence('continuous') },
    pod: POD_LIFE,
    fixed: { alarms: { tick: 4, continuous: 7 }, customMetrics: 4, customMetricsPerNode: 1 },
  });
}

const n2 = (n: number) => fixed(n, 2);
const usd = (n: number) => `$${n < 10 ? n.toFixed(2) : n.toFixed(1)}`;

function report(runs: RunResult[], figures: CostFigures | undefined): string {
  const rows = runs.map((r) => {
    const u = r.usage;
    const fns = Object.entries(r.rates.invocations)
      .filter(([, v]) => v > 0.01)
      .map(([fn, v]) => `${fn} ${n2(v)}`)
      .join(', ');
    const durations = Object.keys(r.rates.invocations)
      .filter((fn) => (r.rates.invocations[fn] ?? 0) > 0.01)
      .map(
        (fn) =>
          `${fn} ${fixed(r.rates.wallMs[fn] ?? 0, 0)} / ${fixed(r.rates.cpuMs[fn] ?? 0, 0)} / ${fixed(r.rates.billedMs[fn] ?? 0, 0)}`,
      )
      .join(', ');
    return [
      r.cadence,
      String(r.nodes),
      fns,
      durations,
      n2(u.gbSeconds),
      `${n2(r.rates.writeUnits)} / ${n2(r.rates.readUnits)}`,
      Object.entries(r.rates.sqs)
        .filter(([, v]) => v > 0)
        .map(([k, v]) => `${k} ${n2(v)}`)
        .join(', ') || '-',
      n2(u.sqsRequests),
      n2(u.eventBridgeEvents),
      fixed(u.logBytes / 1024, 1),
      n2(u.kubeRequests),
      `${fixed(r.load.avg1, 1)} / ${fixed(r.load.busyPercent, 0)} %`,
    ];
  });
  const measured = markdownTable(
    [
      'cadence',
      'nodes',
      'invocations/min',
      'wall / CPU / billed ms per invocation',
      'GB-s/min',
      'DynamoDB WRU / RRU per min',
      'SQS requests/min (local)',
      'SQS/min (AWS, modelled)',
      'events/min',
      'log KB/min',
      'API requests/min',
      'load avg / machine busy',
    ],
    rows,
  );
  const kubeRows = runs.map((r) => [
    r.cadence,
    String(r.nodes),
    Object.entries(r.rates.tickPartMs)
      .map(([k, v]) => `${k} ${fixed(v, 0)}`)
      .join(', ') || '-',
    Object.entries(r.rates.kube)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => `${k} ${n2(v / r.nodes)}`)
      .join(', '),
    Object.entries(r.rates.dynamo)
      .sort(([, a], [, b]) => b - a)
      .map(([k, v]) => `${k} ${n2(v)}`)
      .join(', '),
  ]);
  const kube = markdownTable(
    [
      'cadence',
      'nodes',
      'tick parts (ms)',
      'API requests per node-minute (tick: by part)',
      'DynamoDB requests per minute',
    ],
    kubeRows,
  );
  const crashRows = runs
    .filter((r) => r.crashes.length > 0 || r.podLatencies.length > 0)
    .map((r) => [
      r.cadence,
      r.crashes.map((c) => fixed(c.gapMs / 1000, 1)).join(', ') || '-',
      String(r.crashes.filter((c) => c.leftReady).length),
      r.podLatencies.map((l) => fixed(l / 1000, 1)).join(', ') || '-',
    ]);
  const crashes = markdownTable(
    [
      'cadence',
      'renewal gap around each kill (s)',
      'kills after which a node left Ready',
      'pods at idle: bound → Running (s)',
    ],
    crashRows,
  );
  const parts = [
    '### Measured usage (per minute of the window)',
    '',
    measured,
    '',
    '### Requests by kind',
    '',
    kube,
    '',
    '### Kills and pods at idle',
    '',
    crashes,
  ];
  if (figures) {
    const nodesRow = [1, 10, 100, 1000];
    const costRows = (['tick', 'continuous'] as const).map((c) => [
      c,
      ...nodesRow.map((n) => usd(idleCost(figures, c, n))),
      usd(idleCost(figures, c, 2) - idleCost(figures, c, 1)),
    ]);
    parts.push(
      '',
      '### Idle cost per month, functions only (no pods, no alarms, dashboard or custom metrics)',
      '',
      markdownTable(
        ['cadence', '1 node', '10 nodes', '100 nodes', '1,000 nodes', 'per additional node'],
        costRows,
      ),
    );
  }
  return parts.join('\n');
}

// ---------------------------------------------------------------------------
// Main

/** Reports from the raw files of earlier runs: their runs together, their commands in the figures. */
function fromRawFiles(options: Options): void {
  const raws = (options.from ?? []).map((file) => {
    const raw = JSON.parse(readFileSync(resolve(root, file), 'utf8')) as {
      runs?: RunResult[];
      options?: Options;
    };
    if (!Array.isArray(raw.runs) || raw.runs.length === 0) throw new Error(`--from: ${file} holds no runs`);
    return { file, raw: { runs: raw.runs, options: raw.options } };
  });
  const runs = raws.flatMap((r) => r.raw.runs);
  const cadences = [...new Set(runs.map((r) => r.cadence))];
  const command = raws
    .map(({ raw }) => {
      const o = raw.options;
      return o
        ? `npx tsx bench/idle-cost.ts --cadence ${o.cadences.join(',')} --nodes ${o.nodes.join(',')} --minutes ${o.minutes} --crashes ${o.crashes} --pods ${o.pods}`
        : 'npx tsx bench/idle-cost.ts';
    })
    .join(' and ');
  const figures = cadences.length === 2 ? figuresOf(runs, cadences, `${command}, side by side`) : undefined;
  if (figures && options.writeFigures) {
    writeFileSync(join(root, options.writeFigures), `${JSON.stringify(figures, null, 2)}\n`);
    log(`figures written to ${options.writeFigures}`);
  }
  process.stdout.write(`\n${command}\n\n${report(runs, figures)}\n`);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.from) return fromRawFiles(options);
  const interrupted = interruptSignal(log);
  const logs = new LogCounter();
  logs.install();
  mkdirSync(benchDir, { recursive: true });
  const bench = await startBenchEnvironment({ dir: join(benchDir, 'control-plane'), log });
  const stops: Array<() => Promise<void>> = [() => bench.stop()];
  try {
    const proxy = await startDynamoProxy(bench.dynamo.endpoint);
    stops.push(() => proxy.stop());
    const kubelet = await loadKubeConfig({ kubeconfigPath: bench.controlPlane.kubeletKubeconfig });
    const token = `Bearer ${kubelet.token ?? ''}`;
    attributeTickParts();
    const kube = new HttpRequestCounter((request) => {
      if (headerValue(request, 'authorization') !== token) return undefined;
      const kind = kubeRequestKind(request.method, request.path);
      // At the tick cadence, the part of the tick that sent it (the continuous functions are apart anyway).
      const part = currentTickPart();
      return kind && part ? `${part}: ${kind}` : kind;
    });
    const admin = createToolingClients(bench.controlPlane.adminKubeconfig, {
      requestTimeoutMs: 60_000,
    });
    const envt: Environment = { bench, proxy, admin, kube, logs, interrupted };
    const runs: RunResult[] = [];
    for (const cadence of options.cadences) {
      for (const [i, nodes] of options.nodes.entries()) {
        runs.push(await runOnce(envt, cadence, nodes, options, i === 0));
      }
    }
    const command = `npx tsx bench/idle-cost.ts ${process.argv.slice(2).join(' ')}`.trim();
    const figures = options.cadences.length === 2 ? figuresOf(runs, options.cadences, command) : undefined;
    if (figures && options.writeFigures) {
      writeFileSync(join(root, options.writeFigures), `${JSON.stringify(figures, null, 2)}\n`);
      log(`figures written to ${options.writeFigures}`);
    }
    const file = join(benchDir, `idle-cost-${new Date().toISOString().replaceAll(':', '-')}.json`);
    writeFileSync(file, JSON.stringify({ options, runs, figures, machine: machineSummary() }, null, 2));
    logs.print(
      `\n${machineSummary()}, ${new Date().toISOString()}\n\n${report(runs, figures)}\n\nraw figures: ${file}\n`,
    );
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => log(`stop: ${String(err)}`));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
