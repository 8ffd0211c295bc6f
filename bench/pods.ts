/**
 * Pod pipeline benchmark: bursts of N pods through the whole deployment
 * (pod-watch → local event bus → pod-sync → mock provider in DynamoDB Local →
 * pod-status → API server), at production cadence, on a real local control
 * plane, from bound to Running and through deletion until every trace is gone.
 *
 * Usage: npx tsx bench/pods.ts [--pods 100,1000,10000] [--cap-minutes 20]
 *          [--delete-cap-minutes 10] [--concurrency 32]
 *          [--pod-sync-concurrency 10|unlimited] [--skip-baseline]
 * With a CPU profile of the deployment (and one of the load generator):
 *        node --cpu-prof --cpu-prof-dir=.local/bench-pods/profiles --import tsx bench/pods.ts ...
 *        npx tsx bench/cpu-profile.ts .local/bench-pods/profiles/<file>.cpuprofile
 *
 * One LocalDeployment (schedules every 60 s, timeout 130 s, pod-sync's
 * reserved concurrency `--pod-sync-concurrency`, as in serverless.yml) serves
 * one virtual node for the whole run. Per burst: a fresh namespace, N pods
 * created with `spec.nodeName` already set (so the scheduler is not measured,
 * only our pipeline), `--concurrency` creates in flight, until every pod is
 * Running in the API server or `--cap-minutes` passes; then the namespace is
 * deleted and the benchmark waits until the provider and the known-pod
 * records have none of its pods left (or `--delete-cap-minutes` passes)
 * before the next burst.
 *
 * The load (creates, the watch that sees pods Running, the deletion polling,
 * the baseline) runs in a worker thread (bench/pod-load.ts), so that the
 * deployment's CPU is this process's minus the worker's.
 *
 * Everything is measured from outside the code under test:
 * - bound = when the create call returned; provider create = the mock
 *   record's `createdAt`; Running = when a watch on the namespace first saw
 *   phase Running;
 * - requests: every HTTP request of the main thread, through
 *   node:diagnostics_channel, attributed to the function whose invocation
 *   sent it (the local runtime's AsyncLocalStorage scope), and DynamoDB
 *   requests made inside the mock provider's methods to the mock; new
 *   connections from each answered request's `reusedSocket`; cross-checked
 *   with kube-apiserver's `apiserver_request_total` minus the load's own
 *   requests (which also leaves the controller-manager's);
 * - events: a second rule on the deployment's bus; pod-sync invocations and
 *   their requests by outcome: the runtime's onResult and the request id of
 *   the invocation scope.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../lib/events/pod-event.ts';
import { isNotFound } from '../lib/kube/client.ts';
import { createToolingClients, type ToolingClients } from '../lib/kube/tooling-clients.ts';
import { currentInvocation } from '../lib/local/invocation-scope.ts';
import type { InvocationResult } from '../lib/local/lambda-function.ts';
import {
  DEFAULT_POD_SYNC_CONCURRENCY,
  LocalDeployment,
  type PodSyncConcurrency,
  parsePodSyncConcurrency,
} from '../lib/local/local-deployment.ts';
import { mockPodKey } from '../lib/provider/mock/mock-pod-record.ts';
import { MockPodProvider } from '../lib/provider/mock/mock-pods.ts';
import { StateTable } from '../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import type {
  BaselineDeletion,
  BaselineLoad,
  BurstLoad,
  DeletionLoad,
  LoadCommand,
  LoadReply,
  LoadWorkerData,
} from './pod-load.ts';
import {
  type BenchEnvironment,
  benchLog,
  bump,
  type Distribution,
  diffCounts,
  diffLatencies,
  distribution,
  dynamoDbOperation,
  fixed,
  HttpRequestCounter,
  interruptSignal,
  kubeRequestKind,
  machineBusySeconds,
  machineSummary,
  markdownTable,
  processCpuSeconds,
  type RequestLatency,
  scrapeApiserverRequests,
  startBenchEnvironment,
  sumCounts,
} from './support.ts';

/** Production cadence (serverless.yml): rate(1 minute), timeout 130 s. */
const RATE_MS = 60_000;
const TIMEOUT_MS = 130_000;
const NODE = 'bench-pods';
/** Room for the biggest burst; the scheduler is bypassed, so only the node's reported capacity uses it. */
const CAPACITY = 'cpu=2000,memory=8Ti,pods=20000,ephemeral-storage=8Ti';
/** After the last pod is Running: no new event and no pod-sync running for this long ends the window. */
const QUIET_MS = 5_000;
const QUIET_TIMEOUT_MS = 5 * 60_000;
const PROGRESS_MS = 15_000;
/**
 * The functions a pod costs requests in: all but the heartbeat, whose requests are per node. At
 * the tick cadence the tick runs pod-watch, pod-status and the reconciler as its parts, beside
 * the heartbeat's: its requests count whole (the heartbeat part's lease renewals with them).
 */
const POD_FUNCTIONS = ['pod-watch', 'pod-sync', 'pod-status', 'reconcile', 'tick'] as const;
const BENCH = 'bench';
/** Marks DynamoDB requests the mock provider sends for its own state: `<function> mock <Operation>`. */
const MOCK = 'mock';
/** The whole machine's busy CPU time, beside the processes'. */
const MACHINE = 'machine';
/** CPU of this process's load-generator thread, and of the whole process minus it (the deployment). */
const LOAD = 'load';
const DEPLOYMENT = 'deployment';
/** Progress is recorded this often during a burst, to show stalls. */
const TIMELINE_MS = 5_000;
const STOP_WAIT_MS = 30_000;
/** The targets a pod's whole life is measured against (issue "cost and speed", target 3). */
const TARGET_API_PER_POD = 8;
const TARGET_DYNAMODB_PER_POD = 8;

const root = new URL('..', import.meta.url).pathname;
const benchDir = join(root, '.local', 'bench-pods');
const log = benchLog('bench pods');

// ---------------------------------------------------------------------------
// Options

interface Options {
  bursts: number[];
  capMs: number;
  deleteCapMs: number;
  concurrency: number;
  podSyncConcurrency: PodSyncConcurrency;
  baseline: boolean;
  /** How long the deployment is watched with no pod before the bursts, for its fixed request rate. */
  idleMs: number;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      pods: { type: 'string', default: '100,1000,10000' },
      'cap-minutes': { type: 'string', default: '20' },
      'delete-cap-minutes': { type: 'string', default: '10' },
      concurrency: { type: 'string', default: '32' },
      'pod-sync-concurrency': { type: 'string', default: String(DEFAULT_POD_SYNC_CONCURRENCY) },
      'skip-baseline': { type: 'boolean', default: false },
      'idle-seconds': { type: 'string', default: '60' },
    },
  });
  const bursts = values.pods.split(',').map((part) => Number(part.trim()));
  if (!bursts.every((n) => Number.isInteger(n) && n >= 1 && n <= 20_000)) {
    throw new Error(`--pods: "${values.pods}" is not a list of pod counts between 1 and 20000`);
  }
  const minutes = (name: string, raw: string) => {
    const n = Number(raw);
    if (!(n > 0)) throw new Error(`--${name} must be a positive number of minutes, got "${raw}"`);
    return n * 60_000;
  };
  const concurrency = Number(values.concurrency);
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 256)) {
    throw new Error(`--concurrency must be an integer between 1 and 256, got "${values.concurrency}"`);
  }
  const podSyncConcurrency = parsePodSyncConcurrency(values['pod-sync-concurrency']);
  if (podSyncConcurrency === undefined) {
    throw new Error(
      `--pod-sync-concurrency must be a positive integer or unlimited, got "${values['pod-sync-concurrency']}"`,
    );
  }
  return {
    bursts,
    capMs: minutes('cap-minutes', values['cap-minutes']),
    deleteCapMs: minutes('delete-cap-minutes', values['delete-cap-minutes']),
    concurrency,
    podSyncConcurrency,
    baseline: !values['skip-baseline'],
    idleMs: Math.max(0, Number(values['idle-seconds'])) * 1000,
  };
}

// ---------------------------------------------------------------------------
// The load generator (a worker thread)

class LoadWorker {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (reply: LoadReply) => void }>();
  /** The newest progress of the burst under way. */
  progress = { namespace: '', bound: 0, running: 0 };
  /** From the newest reply: the worker thread's CPU seconds and Kubernetes requests by kind. */
  cpuSeconds = 0;
  kube: Record<string, number> = {};

  constructor(data: LoadWorkerData) {
    this.worker = new Worker(new URL('./pod-load.ts', import.meta.url), { workerData: data });
    this.worker.on('message', (reply: LoadReply) => {
      if ('progress' in reply) {
        this.progress = reply.progress;
        return;
      }
      this.cpuSeconds = reply.cpuSeconds;
      this.kube = reply.kube;
      this.waiting.get(reply.id)?.resolve(reply);
      this.waiting.delete(reply.id);
    });
    this.worker.on('error', (err) => log(`load worker failed: ${err.stack ?? err.message}`));
  }

  async run<T>(command: DistributiveOmit<LoadCommand, 'id'>): Promise<T> {
    const id = this.nextId++;
    const reply = await new Promise<LoadReply>((resolve) => {
      this.waiting.set(id, { resolve });
      this.worker.postMessage({ ...command, id });
    });
    if ('error' in reply) throw new Error(`load worker: ${reply.error}`);
    if (!('result' in reply)) throw new Error('load worker: no result');
    return reply.result as T;
  }

  /** Refreshes `cpuSeconds` and `kube`. */
  async sample(): Promise<void> {
    await this.run<undefined>({ cmd: 'cpu' });
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

type WithCpu<T> = T & { cpuSeconds: Record<string, number> };
/** kwok's work on this box: creating the largest burst's pods Running, then deleting them. */
type Baseline = WithCpu<BaselineLoad> & { deletion: WithCpu<BaselineDeletion> };

// ---------------------------------------------------------------------------
// What the deployment does, counted from outside

/** Whose request this is: the function of the current local-runtime invocation, or the benchmark. */
function requester(): string {
  return currentInvocation()?.functionName ?? BENCH;
}

/** Set while a mock provider method runs: its DynamoDB requests are the provider's own state. */
const providerScope = new AsyncLocalStorage<true>();

/** Runs every MockPodProvider method inside `providerScope` (the class is shared with the deployment's registry). */
function markMockRequests(): void {
  const methods = ['createPod', 'updatePod', 'deletePod', 'getPod', 'listPods'] as const;
  for (const method of methods) {
    const original: unknown = MockPodProvider.prototype[method];
    if (typeof original !== 'function') continue;
    Object.defineProperty(MockPodProvider.prototype, method, {
      configurable: true,
      writable: true,
      value(this: MockPodProvider, ...args: unknown[]) {
        return providerScope.run(true, () => original.apply(this, args));
      },
    });
  }
}

/** Every counter the benchmark reads before and after a window. */
interface Counters {
  /** `<requester> <VERB resource>` of Kubernetes API requests. */
  kube: Map<string, number>;
  /** `<requester> [mock ]<Operation>` of DynamoDB requests. */
  dynamo: Map<string, number>;
  /** Requests that opened a new connection, by the keys of `kube` and `dynamo`. */
  connections: Map<string, number>;
  /** `<namespace> <type>` of events accepted by the bus. */
  events: Map<string, number>;
  /** `<function> <status>[ <outcome>]` of finished invocations. */
  invocations: Map<string, number>;
  /** `<outcome> <api|dynamodb|mock> <kind>` of the requests of finished pod-sync invocations. */
  syncRequests: Map<string, number>;
  deadLetters: number;
  /** apiserver_request_total by `VERB resource[/subresource]`, all clients. */
  apiserver: Map<string, number>;
  /** Kubernetes requests of the load generator, by `VERB resource[/subresource]`. */
  load: Map<string, number>;
  /** CPU seconds: this process, its load thread, the deployment (the rest of it), each component, the machine. */
  cpu: Map<string, number>;
  /** Answer times by the same keys as `kube` and `dynamo`. */
  latencies: Map<string, RequestLatency>;
  at: number;
}

class Observer {
  /** Requests of the pod-sync invocations under way, by request id, until their result comes. */
  private readonly inFlight = new Map<string, Map<string, number>>();
  readonly syncRequests = new Map<string, number>();
  readonly kube = new HttpRequestCounter((request) => {
    // DynamoDB's requests go to "/" and have no Kubernetes kind.
    const kind = kubeRequestKind(request.method, request.path);
    if (kind === undefined) return undefined;
    this.perInvocation(`api ${kind}`);
    return `${requester()} ${kind}`;
  });
  readonly dynamo = new HttpRequestCounter((request) => {
    const operation = dynamoDbOperation(request);
    if (operation === undefined) return undefined;
    const kind = `${providerScope.getStore() ? `${MOCK} ` : ''}${operation}`;
    this.perInvocation(`${providerScope.getStore() ? MOCK : 'dynamodb'} ${operation}`);
    return `${requester()} ${kind}`;
  });
  readonly events = new Map<string, number>();
  readonly invocations = new Map<string, number>();
  /** Provider creates reported by pod-sync, per namespace: live progress without reading DynamoDB. */
  readonly createdByNamespace = new Map<string, number>();
  lastActivityAt = performance.now();
  rssPeak = 0;
  heapPeak = 0;

  private perInvocation(kind: string): void {
    const scope = currentInvocation();
    if (scope?.functionName !== 'pod-sync') return;
    let counts = this.inFlight.get(scope.requestId);
    if (!counts) {
      counts = new Map();
      this.inFlight.set(scope.requestId, counts);
    }
    bump(counts, kind);
  }

  onEvent(namespace: string, type: string): void {
    bump(this.events, `${namespace} ${type}`);
    this.lastActivityAt = performance.now();
  }

  onResult(fn: string, requestId: string, outcome: InvocationResult): void {
    const { status } = outcome;
    const result = status === 'ok' ? outcome.result : undefined;
    let key = `${fn} ${status}`;
    if (status !== 'ok') key += ` ${errorKind(outcome.error)}`;
    if (fn === 'pod-sync' && status === 'ok' && isSyncResult(result)) {
      key += ` ${result.outcome}`;
      if (result.outcome === 'created') {
        bump(this.createdByNamespace, result.key.slice(0, result.key.indexOf('/')));
      }
    }
    bump(this.invocations, key);
    if (fn === 'pod-sync') {
      this.lastActivityAt = performance.now();
      // `ok:created`, `error:PodSyncRetryError:busy`: one word, the kinds follow it.
      const outcomeKey = key.slice('pod-sync '.length).replaceAll(' ', ':');
      bump(this.syncRequests, `${outcomeKey} invocations`);
      for (const [kind, n] of this.inFlight.get(requestId) ?? []) {
        bump(this.syncRequests, `${outcomeKey} ${kind}`, n);
      }
      this.inFlight.delete(requestId);
    }
  }

  sampleMemory(): void {
    const m = process.memoryUsage();
    this.rssPeak = Math.max(this.rssPeak, m.rss);
    this.heapPeak = Math.max(this.heapPeak, m.heapUsed);
  }
}

/** `PodSyncRetryError:busy`, `TimeoutError` (middy, at the deadline), `LambdaTimeoutError`... */
function errorKind(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const reason = 'reason' in error && typeof error.reason === 'string' ? `:${error.reason}` : '';
  return `${error.name}${reason}`;
}

function isSyncResult(value: unknown): value is { key: string; outcome: string } {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.key === 'string' && typeof v.outcome === 'string';
}

interface Run {
  env: BenchEnvironment;
  admin: ToolingClients;
  table: StateTable;
  deployment: LocalDeployment;
  observer: Observer;
  load: LoadWorker;
  options: Options;
  interrupted: AbortSignal;
}

async function counters(run: Run): Promise<Counters> {
  const { env, admin, observer, deployment, load } = run;
  const apiserver = await scrapeApiserverRequests(admin.config, env.controlPlane.server).catch(
    (err: unknown) => {
      log(`scraping /metrics failed: ${String(err)}`);
      return new Map<string, number>();
    },
  );
  await load.sample();
  const cpu = processCpuSeconds(env.pids);
  const usage = process.cpuUsage();
  const processSeconds = (usage.user + usage.system) / 1e6;
  cpu.set(BENCH, processSeconds);
  cpu.set(LOAD, load.cpuSeconds);
  cpu.set(DEPLOYMENT, processSeconds - load.cpuSeconds);
  cpu.set(MACHINE, machineBusySeconds());
  return {
    kube: observer.kube.snapshot(),
    dynamo: observer.dynamo.snapshot(),
    connections: new Map([...observer.kube.connections(), ...observer.dynamo.connections()]),
    events: new Map(observer.events),
    invocations: new Map(observer.invocations),
    syncRequests: new Map(observer.syncRequests),
    deadLetters: deployment.bus.deadLetters.length,
    apiserver,
    load: new Map(Object.entries(load.kube)),
    cpu,
    latencies: new Map([...observer.kube.latencies(), ...observer.dynamo.latencies()]),
    at: performance.now(),
  };
}

/** What happened between two counter snapshots. */
interface WindowFigures {
  seconds: number;
  kube: Record<string, number>;
  dynamo: Record<string, number>;
  connections: Record<string, number>;
  /** By type, for the burst's namespace only. */
  events: Record<string, number>;
  invocations: Record<string, number>;
  syncRequests: Record<string, number>;
  deadLetters: number;
  apiserver: Record<string, number>;
  load: Record<string, number>;
  cpuSeconds: Record<string, number>;
  /** Mean and maximum answer time (ms) by `<requester> <kind>`, for the requests of the window. */
  latencyMs: Record<string, { count: number; mean: number; max: number }>;
}

function windowFigures(before: Counters, after: Counters, namespace: string): WindowFigures {
  const events: Record<string, number> = {};
  for (const [key, value] of diffCounts(after.events, before.events)) {
    const [ns, type = '?'] = key.split(' ');
    if (ns === namespace) events[type] = value;
  }
  const cpuSeconds: Record<string, number> = {};
  for (const [name, seconds] of after.cpu) {
    const was = before.cpu.get(name);
    if (was !== undefined) cpuSeconds[name] = seconds - was;
  }
  return {
    seconds: (after.at - before.at) / 1000,
    kube: Object.fromEntries(diffCounts(after.kube, before.kube)),
    dynamo: Object.fromEntries(diffCounts(after.dynamo, before.dynamo)),
    connections: Object.fromEntries(diffCounts(after.connections, before.connections)),
    events,
    invocations: Object.fromEntries(diffCounts(after.invocations, before.invocations)),
    syncRequests: Object.fromEntries(diffCounts(after.syncRequests, before.syncRequests)),
    deadLetters: after.deadLetters - before.deadLetters,
    apiserver: Object.fromEntries(diffCounts(after.apiserver, before.apiserver)),
    load: Object.fromEntries(diffCounts(after.load, before.load)),
    cpuSeconds,
    latencyMs: Object.fromEntries(
      [...diffLatencies(after.latencies, before.latencies)].map(([key, l]) => [
        key,
        { count: l.count, mean: l.totalMs / l.count, max: l.maxMs },
      ]),
    ),
  };
}

/** `<requester> <kind>` → requester. */
function ownerOf(key: string): string {
  return key.slice(0, key.indexOf(' '));
}

/** `<requester> [mock ]<kind>` → whether it is the mock provider's own state. */
function isMockKey(key: string): boolean {
  return key.slice(key.indexOf(' ') + 1).startsWith(`${MOCK} `);
}

/**
 * Sum of the entries of `who` (a function, `bench`, `*` for the whole
 * deployment, `pods` for the functions a pod costs requests in), without the
 * mock provider's own requests unless `mock` says which to count.
 */
function byRequester(
  counts: Record<string, number>,
  who: string,
  mock: 'without' | 'only' | 'with' = 'without',
): number {
  return sumCounts(new Map(Object.entries(counts)), (key) => {
    const owner = ownerOf(key);
    const mine =
      who === '*'
        ? owner !== BENCH
        : who === 'pods'
          ? (POD_FUNCTIONS as readonly string[]).includes(owner)
          : owner === who;
    if (!mine) return false;
    return mock === 'with' || (mock === 'only') === isMockKey(key);
  });
}

/** Two windows' counts added up (creation and deletion: a pod's whole life). */
function addCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const sum: Record<string, number> = { ...a };
  for (const [key, value] of Object.entries(b)) sum[key] = (sum[key] ?? 0) + value;
  return sum;
}

// ---------------------------------------------------------------------------
// One burst

interface BurstFigures {
  pods: number;
  namespace: string;
  /** Pods the API server accepted, and creates that failed for good. */
  created: number;
  createFailures: number;
  running: number;
  providerCreated: number;
  /** Pods the provider saw more than one create for (must be 0). */
  doubleCreates: number;
  allRunning: boolean;
  /** From the first create call to the last create returning, and to the last pod Running. */
  createSeconds: number;
  runningSeconds: number;
  /** Seconds from bound to provider create and to Running. */
  toProvider: Distribution;
  toRunning: Distribution;
  /** Every TIMELINE_MS from the first create: [seconds, bound, created in provider, Running]. */
  timeline: Array<[number, number, number, number]>;
  /** Whether the node was seen not Ready during the burst (creation and deletion), and how often. */
  nodeNotReadySamples: number;
  /** Load average (1 minute) at the start and end of the creation window. */
  loadAverage: [number, number];
  create: WindowFigures;
  rssPeakMb: number;
  heapPeakMb: number;
  deletion: DeletionLoad & { window: WindowFigures };
}

async function nodeReady(admin: ToolingClients): Promise<boolean> {
  try {
    const node = await admin.core.readNode({ name: NODE });
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    const tainted = node.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready') ?? false;
    return ready && !tainted;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

async function waitUntil(
  what: string,
  probe: () => Promise<boolean> | boolean,
  options: { timeoutMs: number; intervalMs: number; signal: AbortSignal },
): Promise<boolean> {
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    options.signal.throwIfAborted();
    if (await probe()) return true;
    if (performance.now() > deadline) {
      log(`gave up waiting for ${what} after ${(options.timeoutMs / 1000).toFixed(0)} s`);
      return false;
    }
    await delay(options.intervalMs, undefined, { signal: options.signal });
  }
}

/** Waits until the pipeline has been idle (no event, no pod-sync running or finishing) for QUIET_MS. */
function waitQuiet(run: Run): Promise<boolean> {
  return waitUntil(
    'the pipeline to go quiet',
    () =>
      run.deployment.runtime.runningCount('pod-sync') === 0 &&
      performance.now() - run.observer.lastActivityAt >= QUIET_MS,
    { timeoutMs: QUIET_TIMEOUT_MS, intervalMs: 250, signal: run.interrupted },
  );
}

/** The machine's 1-minute load average: how busy the shared machine is now. */
function loadAverage(): number {
  return loadavg()[0] ?? Number.NaN;
}

async function runBurst(run: Run, n: number): Promise<BurstFigures> {
  const { admin, table, observer, options, interrupted, load } = run;
  const namespace = `burst-${n}-${randomBytes(3).toString('hex')}`;

  let notReady = 0;
  const progress = setInterval(() => {
    const created = observer.createdByNamespace.get(namespace) ?? 0;
    log(
      `${n}: ${load.progress.bound} bound, ${created} created in provider, ${load.progress.running} Running, ` +
        `${run.deployment.runtime.runningCount('pod-sync')} pod-sync running, load ${fixed(loadAverage())}`,
    );
    nodeReady(admin).then(
      (ready) => {
        if (!ready) {
          notReady++;
          log(`${NODE} is not Ready`);
        }
      },
      () => undefined,
    );
  }, PROGRESS_MS);
  observer.rssPeak = 0;
  observer.heapPeak = 0;
  const sampler = setInterval(() => observer.sampleMemory(), 1_000);
  const timeline: BurstFigures['timeline'] = [];
  let timelineStart = 0;
  const recorder = setInterval(() => {
    if (timelineStart === 0 || load.progress.namespace !== namespace) return;
    timeline.push([
      Math.round((performance.now() - timelineStart) / 1000),
      load.progress.bound,
      observer.createdByNamespace.get(namespace) ?? 0,
      load.progress.running,
    ]);
  }, TIMELINE_MS);

  try {
    const before = await counters(run);
    const loadAtStart = loadAverage();
    timelineStart = performance.now();
    const burst = await load.run<BurstLoad>({
      cmd: 'burst',
      namespace,
      n,
      concurrency: options.concurrency,
      capMs: options.capMs,
    });
    interrupted.throwIfAborted();
    const boundAt = new Map(Object.entries(burst.boundAt));
    const runningTimes = Object.values(burst.runningAt);
    const running = runningTimes.length;
    const lastRunningAt = Math.max(...runningTimes, burst.startedAt);
    log(
      `${n}: ${running}/${boundAt.size} Running after ${((lastRunningAt - burst.startedAt) / 1000).toFixed(1)} s`,
    );
    // A capped burst is still busy: its window ends now.
    if (burst.allRunning) await waitQuiet(run);
    const after = await counters(run);
    const loadAtEnd = loadAverage();

    // The provider's side: one query of the namespace's partition (tombstones included).
    const records = await table.query(mockPodKey(namespace, '').pk);
    const toProvider: number[] = [];
    let doubleCreates = 0;
    for (const record of records) {
      const bound = boundAt.get(String(record.sk));
      if (typeof record.createdAt === 'number' && bound !== undefined)
        toProvider.push(record.createdAt - bound);
      if (typeof record.creates === 'number' && record.creates > 1) doubleCreates++;
    }
    const toRunning = Object.entries(burst.runningAt).flatMap(([name, at]) => {
      const bound = boundAt.get(name);
      return bound === undefined ? [] : [at - bound];
    });
    const create = windowFigures(before, after, namespace);
    clearInterval(recorder);
    const rssPeakMb = observer.rssPeak / 2 ** 20;
    const heapPeakMb = observer.heapPeak / 2 ** 20;

    const deletion = await deleteBurst(run, namespace, n);
    return {
      pods: n,
      namespace,
      created: boundAt.size,
      createFailures: burst.failures,
      running,
      providerCreated: records.length,
      doubleCreates,
      allRunning: burst.allRunning,
      createSeconds: (burst.createdAt - burst.startedAt) / 1000,
      runningSeconds: (lastRunningAt - burst.startedAt) / 1000,
      toProvider: distribution(toProvider.map((ms) => ms / 1000)),
      toRunning: distribution(toRunning.map((ms) => ms / 1000)),
      timeline,
      nodeNotReadySamples: notReady,
      loadAverage: [loadAtStart, loadAtEnd],
      create,
      rssPeakMb,
      heapPeakMb,
      deletion,
    };
  } finally {
    clearInterval(progress);
    clearInterval(sampler);
    clearInterval(recorder);
  }
}

/** Deletes the namespace and waits until the provider, the known-pod records and the API server have none of it. */
async function deleteBurst(run: Run, namespace: string, n: number): Promise<BurstFigures['deletion']> {
  const { options, load } = run;
  const before = await counters(run);
  const result = await load.run<DeletionLoad>({ cmd: 'delete', namespace, n, capMs: options.deleteCapMs });
  if (result.providerEmptyS !== undefined && result.knownEmptyS !== undefined) await waitQuiet(run);
  const after = await counters(run);
  return { ...result, window: windowFigures(before, after, namespace) };
}

// ---------------------------------------------------------------------------
// Report

const KWOK_PODS = 10_000;
const KWOK_SECONDS = 60;

function perPod(count: number, pods: number): string {
  return fixed(count / Math.max(1, pods), 2);
}

function seconds(d: Distribution): string {
  return `${fixed(d.p50)} / ${fixed(d.p99)} / ${fixed(d.max)}`;
}

/** The biggest entries per pod; those under 0.005 per pod are summed up as `rest`. */
function topEntries(counts: Record<string, number>, pods: number, limit = 12): string {
  const sorted = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  const shown = sorted.slice(0, limit).filter(([, value]) => value / Math.max(1, pods) >= 0.005);
  const rest = sorted.slice(shown.length).reduce((a, [, value]) => a + value, 0);
  return [
    ...shown.map(([key, value]) => `${key} ${perPod(value, pods)}`),
    ...(rest > 0 ? [`rest ${rest} requests or invocations in all`] : []),
  ].join(', ');
}

/** The most frequent request kinds of the deployment with their mean and maximum answer times. */
function latencyText(latencies: WindowFigures['latencyMs'], limit = 6): string {
  const ours = Object.entries(latencies).filter(([key]) => !key.startsWith(`${BENCH} `));
  const text = (entries: typeof ours) =>
    entries.map(([key, l]) => `${key} ${fixed(l.mean, 0)} / ${fixed(l.max, 0)}`).join(', ');
  const busiest = [...ours].sort((a, b) => b[1].count - a[1].count).slice(0, limit);
  const slowest = [...ours]
    .filter(([key]) => !busiest.some(([k]) => k === key) && !key.includes(' WATCH '))
    .sort((a, b) => b[1].mean - a[1].mean)
    .slice(0, 3);
  return `${text(busiest)}; slowest others: ${text(slowest)}`;
}

/** About every 30 s of a burst: `seconds: bound/created in provider/Running`. */
function timelineText(timeline: BurstFigures['timeline']): string {
  return timeline
    .filter((_, i) => (i + 1) % (30_000 / TIMELINE_MS) === 0)
    .map(([t, bound, created, running]) => `${t} s: ${bound}/${created}/${running}`)
    .join(', ');
}

/**
 * Requests per pod-sync invocation, by outcome: `created 1000 × (API 3.00: GET
 * pods 1.00, ...; DynamoDB 3.00: ...; mock 2.00)`.
 */
function syncRequestsText(syncRequests: Record<string, number>): string[] {
  const outcomes = new Map<string, Map<string, number>>();
  for (const [key, value] of Object.entries(syncRequests)) {
    const [outcome = '?', ...rest] = key.split(' ');
    const kinds = outcomes.get(outcome) ?? new Map<string, number>();
    kinds.set(rest.join(' '), value);
    outcomes.set(outcome, kinds);
  }
  return [...outcomes]
    .sort((a, b) => (b[1].get('invocations') ?? 0) - (a[1].get('invocations') ?? 0))
    .map(([outcome, kinds]) => {
      const n = kinds.get('invocations') ?? 0;
      const group = (prefix: string, label: string) => {
        const entries = [...kinds].filter(([k]) => k.startsWith(`${prefix} `));
        const total = entries.reduce((a, [, v]) => a + v, 0);
        const parts = entries
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k.slice(prefix.length + 1)} ${perPod(v, n)}`);
        return `${label} ${perPod(total, n)}${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`;
      };
      return `  - ${outcome}: ${n} × [${group('api', 'API')}; ${group('dynamodb', 'DynamoDB')}; ${group(MOCK, 'mock')}]`;
    });
}

/**
 * The requests per pod of the pod functions in a creation and a deletion
 * window, less what the deployment sends with no pod at all in as long
 * (locks, bookmarks, status polls, reconciler passes: per node and minute,
 * not per pod), measured in the idle window.
 */
function netOfIdle(
  counts: Record<string, number>,
  seconds: number,
  idle: WindowFigures | undefined,
  source: 'kube' | 'dynamo',
): number {
  const all = byRequester(counts, 'pods');
  if (!idle || idle.seconds <= 0) return all;
  return all - (byRequester(idle[source], 'pods') / idle.seconds) * seconds;
}

function cpuText(cpuSeconds: Record<string, number>): string {
  return Object.entries(cpuSeconds)
    .map(([name, v]) => `${name} ${fixed(v)}`)
    .join(', ');
}

function report(
  bursts: readonly BurstFigures[],
  baseline: Baseline | undefined,
  idle: WindowFigures | undefined,
): string {
  const floorRate = baseline ? (baseline.pods - baseline.failures) / baseline.seconds : Number.NaN;
  const latency = markdownTable(
    [
      'pods',
      'Running',
      'creates took (s)',
      'all Running after (s)',
      'sustained pods/s',
      'bound → provider create p50 / p99 / max (s)',
      'bound → Running p50 / p99 / max (s)',
      'vs kwok (10,000 in 60 s)',
      'vs this box without us',
      'load average (1 min) at start / end',
    ],
    bursts.map((b) => {
      const rate = b.running / b.runningSeconds;
      return [
        String(b.pods),
        `${b.running}${b.allRunning ? '' : ' (capped)'}`,
        fixed(b.createSeconds),
        fixed(b.runningSeconds),
        fixed(rate),
        seconds(b.toProvider),
        seconds(b.toRunning),
        `${fixed(KWOK_PODS / KWOK_SECONDS / rate)}× slower`,
        baseline ? `${fixed(floorRate / rate)}× slower` : 'n/a',
        `${fixed(b.loadAverage[0])} / ${fixed(b.loadAverage[1])}`,
      ];
    }),
  );
  const life = markdownTable(
    [
      'pods',
      `API req/pod (target ≤ ${TARGET_API_PER_POD}): create + delete = life`,
      'of which pod-watch / pod-sync / pod-status / reconcile / tick',
      `DynamoDB req/pod (target ≤ ${TARGET_DYNAMODB_PER_POD}, mock not counted): create + delete = life`,
      'of which pod-watch / pod-sync / pod-status / reconcile / tick',
      'net of the idle rate: API / DynamoDB req/pod',
      'mock provider DynamoDB req/pod (not counted)',
      'heartbeat API / DynamoDB req in the windows',
      'events/pod',
      'pod-sync invocations/pod',
    ],
    bursts.map((b) => {
      const n = b.created;
      const c = b.create;
      const d = b.deletion.window;
      const kube = addCounts(c.kube, d.kube);
      const dynamo = addCounts(c.dynamo, d.dynamo);
      const split = (counts: Record<string, number>) =>
        POD_FUNCTIONS.map((f) => perPod(byRequester(counts, f), n)).join(' / ');
      const phases = (a: Record<string, number>, z: Record<string, number>) =>
        `${perPod(byRequester(a, 'pods'), n)} + ${perPod(byRequester(z, 'pods'), n)} = **${perPod(byRequester(addCounts(a, z), 'pods'), n)}**`;
      const events =
        sumCounts(new Map(Object.entries(c.events))) + sumCounts(new Map(Object.entries(d.events)));
      const syncs = sumCounts(new Map(Object.entries(addCounts(c.invocations, d.invocations))), (k) =>
        k.startsWith('pod-sync '),
      );
      return [
        String(b.pods),
        phases(c.kube, d.kube),
        split(kube),
        phases(c.dynamo, d.dynamo),
        split(dynamo),
        `${fixed((netOfIdle(c.kube, c.seconds, idle, 'kube') + netOfIdle(d.kube, d.seconds, idle, 'kube')) / Math.max(1, n), 2)} / ${fixed((netOfIdle(c.dynamo, c.seconds, idle, 'dynamo') + netOfIdle(d.dynamo, d.seconds, idle, 'dynamo')) / Math.max(1, n), 2)}`,
        perPod(byRequester(dynamo, 'pods', 'only'), n),
        `${byRequester(kube, 'heartbeat')} / ${byRequester(dynamo, 'heartbeat', 'with')}`,
        perPod(events, n),
        perPod(syncs, n),
      ];
    }),
  );
  const crossCheck = markdownTable(
    [
      'pods',
      'kind',
      'ours (deployment)',
      'load generator',
      'apiserver_request_total',
      'apiserver − load − ours',
    ],
    bursts.flatMap((b) => {
      const c = b.create;
      const d = b.deletion.window;
      const kube = addCounts(c.kube, d.kube);
      const apiserver = addCounts(c.apiserver, d.apiserver);
      const load = addCounts(c.load, d.load);
      const ours = new Map<string, number>();
      for (const [key, value] of Object.entries(kube)) {
        if (ownerOf(key) === BENCH || key.includes(' WATCH ')) continue;
        bump(ours, key.slice(key.indexOf(' ') + 1), value);
      }
      const kinds = new Set([
        ...ours.keys(),
        ...Object.keys(apiserver).filter((k) => !k.startsWith('WATCH')),
      ]);
      return (
        [...kinds]
          .map((kind) => ({
            kind,
            ours: ours.get(kind) ?? 0,
            load: load[kind] ?? 0,
            apiserver: apiserver[kind] ?? 0,
          }))
          // Our kinds, and what other clients sent a lot of (the namespace controller's own work is left out).
          .filter((r) => r.ours > 0 || r.apiserver - r.load >= Math.max(3, b.pods / 2))
          .sort((x, y) => y.apiserver - x.apiserver)
          .map((r) => [
            String(b.pods),
            r.kind,
            String(r.ours),
            String(r.load),
            String(r.apiserver),
            String(r.apiserver - r.load - r.ours),
          ])
      );
    }),
  );
  const cost = markdownTable(
    [
      'pods',
      'window: create / delete (s)',
      'deployment CPU ms/pod: create + delete',
      'deployment CPU s: create / delete',
      'kube-apiserver',
      'etcd',
      'controller-manager',
      'DynamoDB Local',
      'load generator',
      'CPU ms per pod (all, create)',
      'peak RSS (MB)',
      'peak heap (MB)',
      'machine busy (CPU s, create)',
      'of which not ours',
      'node not Ready samples',
    ],
    bursts.map((b) => {
      const c = b.create.cpuSeconds;
      const d = b.deletion.window.cpuSeconds;
      const parts = ['kube-apiserver', 'etcd', 'kube-controller-manager', 'kube-scheduler', 'dynamodb-local'];
      const all = [DEPLOYMENT, LOAD, ...parts].reduce((a, name) => a + (c[name] ?? 0), 0);
      const machine = c[MACHINE] ?? Number.NaN;
      const n = Math.max(1, b.created);
      return [
        String(b.pods),
        `${fixed(b.create.seconds)} / ${fixed(b.deletion.window.seconds)}`,
        `${fixed(((c[DEPLOYMENT] ?? Number.NaN) / n) * 1000, 1)} + ${fixed(((d[DEPLOYMENT] ?? Number.NaN) / n) * 1000, 1)}`,
        `${fixed(c[DEPLOYMENT] ?? Number.NaN)} / ${fixed(d[DEPLOYMENT] ?? Number.NaN)}`,
        fixed(c['kube-apiserver'] ?? Number.NaN),
        fixed(c.etcd ?? Number.NaN),
        fixed(c['kube-controller-manager'] ?? Number.NaN),
        fixed(c['dynamodb-local'] ?? Number.NaN),
        fixed(c[LOAD] ?? Number.NaN),
        `${fixed((all / n) * 1000, 1)} ms`,
        fixed(b.rssPeakMb, 0),
        fixed(b.heapPeakMb, 0),
        fixed(machine),
        fixed(Math.max(0, machine - all)),
        String(b.nodeNotReadySamples),
      ];
    }),
  );
  const connections = markdownTable(
    [
      'pods',
      'Kubernetes: new connections / requests (deployment, create + delete)',
      'new Kubernetes connections per minute',
      'DynamoDB: new connections / requests',
    ],
    bursts.map((b) => {
      const conns = addCounts(b.create.connections, b.deletion.window.connections);
      const kube = addCounts(b.create.kube, b.deletion.window.kube);
      const dynamo = addCounts(b.create.dynamo, b.deletion.window.dynamo);
      const ours = (counts: Record<string, number>, kubeKeys: boolean) =>
        sumCounts(
          new Map(Object.entries(counts)),
          (key) =>
            ownerOf(key) !== BENCH && !key.includes(' WATCH ') && (kubeKeys ? key in kube : key in dynamo),
        );
      const minutes = (b.create.seconds + b.deletion.window.seconds) / 60;
      const kubeConns = ours(conns, true);
      return [
        String(b.pods),
        `${kubeConns} / ${ours(kube, true)}`,
        fixed(kubeConns / Math.max(minutes, 1 / 60), 0),
        `${ours(conns, false)} / ${ours(dynamo, false)}`,
      ];
    }),
  );
  const deletion = markdownTable(
    [
      'pods',
      'provider empty after (s)',
      'known pods empty after (s)',
      'namespace gone after (s)',
      'API req/pod (pod functions)',
      'DynamoDB req/pod (pod functions, mock not counted)',
      'events/pod',
      'pod-sync invocations/pod',
      'failed, dead letters',
    ],
    bursts.map((b) => {
      const d = b.deletion;
      const w = d.window;
      const n = b.created;
      const gone = (s: number | undefined, left: number) =>
        s === undefined ? `not in cap (${left} left)` : fixed(s);
      return [
        String(b.pods),
        gone(d.providerEmptyS, d.providerLeft),
        gone(d.knownEmptyS, d.knownLeft),
        d.namespaceGoneS === undefined ? 'not in cap' : fixed(d.namespaceGoneS),
        perPod(byRequester(w.kube, 'pods'), n),
        perPod(byRequester(w.dynamo, 'pods'), n),
        perPod(sumCounts(new Map(Object.entries(w.events))), n),
        perPod(
          sumCounts(new Map(Object.entries(w.invocations)), (k) => k.startsWith('pod-sync ')),
          n,
        ),
        `${sumCounts(new Map(Object.entries(w.invocations)), (k) => k.startsWith('pod-sync ') && !k.startsWith('pod-sync ok'))}, ${w.deadLetters}`,
      ];
    }),
  );
  const details = bursts.flatMap((b) => {
    const n = b.created;
    const w = b.create;
    const ours = (counts: Record<string, number>) =>
      Object.fromEntries(Object.entries(counts).filter(([k]) => ownerOf(k) !== BENCH));
    const failed = sumCounts(
      new Map(Object.entries(w.invocations)),
      (k) => k.startsWith('pod-sync ') && !k.startsWith('pod-sync ok'),
    );
    return [
      `- ${b.pods} pods (namespace ${b.namespace}; ${b.createFailures} creates failed, ` +
        `${b.providerCreated} in the provider, ${b.doubleCreates} created twice there; ` +
        `${failed} failed pod-sync invocations, ${w.deadLetters} dead letters while creating):`,
      `  - creation, API requests/pod by function and kind: ${topEntries(ours(w.kube), n)}`,
      `  - creation, DynamoDB requests/pod by function and operation: ${topEntries(ours(w.dynamo), n)}`,
      `  - creation, invocations/pod: ${topEntries(w.invocations, n)}`,
      `  - deletion, API requests/pod: ${topEntries(ours(b.deletion.window.kube), n)}`,
      `  - deletion, DynamoDB requests/pod: ${topEntries(ours(b.deletion.window.dynamo), n)}`,
      `  - deletion, invocations/pod: ${topEntries(b.deletion.window.invocations, n)}`,
      `  - events/pod: creation ${JSON.stringify(w.events)}, deletion ${JSON.stringify(b.deletion.window.events)}`,
      '  - requests per pod-sync invocation by outcome (creation and deletion):',
      ...syncRequestsText(addCounts(w.syncRequests, b.deletion.window.syncRequests)).map((l) => `  ${l}`),
      `  - answer times, mean / max (ms), busiest kinds first: ${latencyText(w.latencyMs)}`,
      ...(b.runningSeconds >= 30
        ? [`  - bound/created in provider/Running: ${timelineText(b.timeline)}`]
        : []),
    ];
  });
  return [
    `Machine: ${machineSummary()}. Node ${NODE}, schedules every ${RATE_MS / 1000} s, timeout ${TIMEOUT_MS / 1000} s.`,
    '',
    '### Latency and throughput (pods created with spec.nodeName set: the scheduler is not measured)',
    '',
    ...(baseline
      ? [
          `This box without us (kwok's work: create, then one status write per pod, ${baseline.pods} pods, ` +
            `nothing else running): ${fixed(baseline.seconds)} s, ${fixed(floorRate)} pods/s; CPU s ` +
            cpuText(baseline.cpuSeconds),
          '',
          `Deleting them as the bursts' pods are deleted (the namespace deleted; a kubelet at its quickest ` +
            `writing each terminating pod's terminated status once and deleting it with grace 0, ` +
            `no provider, no records, no Events): namespace gone after ${fixed(baseline.deletion.seconds)} s` +
            `${baseline.deletion.failures > 0 ? ` (${baseline.deletion.failures} failed)` : ''}; CPU s ` +
            cpuText(baseline.deletion.cpuSeconds),
          '',
        ]
      : []),
    latency,
    '',
    "### A pod's whole life: requests per pod (creation window + deletion window)",
    '',
    ...(idle
      ? [
          `Idle rate (no pod, ${fixed(idle.seconds, 0)} s before the bursts), requests per minute of the pod functions: ` +
            `API ${fixed((byRequester(idle.kube, 'pods') / idle.seconds) * 60)}, DynamoDB ${fixed((byRequester(idle.dynamo, 'pods') / idle.seconds) * 60)} ` +
            `(${topEntries(
              Object.fromEntries(
                Object.entries(addCounts(idle.kube, idle.dynamo)).filter(([k]) =>
                  (POD_FUNCTIONS as readonly string[]).includes(ownerOf(k)),
                ),
              ),
              idle.seconds / 60,
              8,
            )} per minute).`,
          '',
        ]
      : []),
    life,
    '',
    '### Cross-check with kube-apiserver (creation + deletion windows; apiserver counts every client)',
    '',
    crossCheck,
    '',
    '### CPU (seconds; "deployment" is this process minus its load-generator thread)',
    '',
    cost,
    '',
    '### Connections (answered requests that opened a new TCP connection)',
    '',
    connections,
    '',
    '### Deletion (namespace delete until provider, known pods and namespace are empty)',
    '',
    deletion,
    '',
    '### Details',
    '',
    ...details,
  ].join('\n');
}

// ---------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const interrupted = interruptSignal(log);
  const stops: Array<() => Promise<void>> = [];
  markMockRequests();
  try {
    mkdirSync(benchDir, { recursive: true });
    const env = await startBenchEnvironment({ dir: join(benchDir, 'control-plane'), log });
    stops.push(() => env.stop());
    interrupted.throwIfAborted();

    const tableName = `svk-bench-pods-${Date.now().toString(36)}`;
    const { client, doc } = createDynamoDbClient({ endpoint: env.dynamo.endpoint, region: 'local' });
    await createTable(client, tableName);
    const table = new StateTable(doc, tableName);
    const admin = createToolingClients(env.controlPlane.adminKubeconfig, {
      requestTimeoutMs: 120_000,
    });
    const load = new LoadWorker({
      adminKubeconfig: env.controlPlane.adminKubeconfig,
      dynamoEndpoint: env.dynamo.endpoint,
      tableName,
      node: NODE,
    });
    stops.push(() => load.stop());
    const largest = Math.max(...options.bursts);
    let baseline: Baseline | undefined;
    if (options.baseline) {
      const cpu = () => {
        const c = processCpuSeconds(env.pids);
        c.set(LOAD, load.cpuSeconds);
        c.set(MACHINE, machineBusySeconds());
        return c;
      };
      const measured = async <T>(command: DistributiveOmit<LoadCommand, 'id'>) => {
        await load.sample();
        const cpuBefore = cpu();
        const result = await load.run<T>(command);
        const cpuAfter = cpu();
        const cpuSeconds: Record<string, number> = {};
        for (const [name, value] of cpuAfter) cpuSeconds[name] = value - (cpuBefore.get(name) ?? value);
        return { ...result, cpuSeconds };
      };
      const created = await measured<BaselineLoad>({
        cmd: 'baseline',
        n: largest,
        concurrency: options.concurrency,
      });
      const deleted = await measured<BaselineDeletion>({
        cmd: 'baseline-delete',
        namespace: created.namespace,
        n: largest,
        concurrency: options.concurrency,
      });
      baseline = { ...created, deletion: deleted };
    }
    const observer = new Observer();
    const deployment = new LocalDeployment({
      env: {
        SVK_KUBECONFIG: env.controlPlane.kubeletKubeconfig,
        SVK_DYNAMODB_ENDPOINT: env.dynamo.endpoint,
        AWS_REGION: 'local',
        SVK_TABLE_NAME: tableName,
        SVK_LOG_LEVEL: process.env.SVK_BENCH_LOG_LEVEL ?? 'warn',
        // Benchmarks measure the pipeline: pinned to the mock whatever the shell's environment.
        SVK_PROVIDER: 'mock',
        SVK_NODE_NAMES: NODE,
        SVK_NODE_CAPACITY: CAPACITY,
      },
      rateMs: RATE_MS,
      timeoutMs: TIMEOUT_MS,
      podSyncConcurrency: options.podSyncConcurrency,
      onResult: (invocation, result) => {
        observer.onResult(invocation.functionName, invocation.requestId, result);
        if (result.status !== 'ok' && invocation.functionName !== 'pod-sync') {
          log(`${invocation.functionName} ${result.status}: ${String(result.error)}`);
        }
      },
    });
    // A second rule, like a second target on the bus: counts every event pod-watch publishes.
    deployment.bus.addRule({
      name: 'bench-count',
      pattern: { source: [POD_EVENT_SOURCE], 'detail-type': [POD_EVENT_DETAIL_TYPE] },
      target: async (event) => {
        const detail = event.detail as { namespace?: unknown; type?: unknown };
        observer.onEvent(String(detail.namespace), String(detail.type));
      },
    });
    // Crashed invocations end at once, but the bus still retries their events: do not wait for that.
    stops.push(() =>
      Promise.race([
        deployment.stop({ abortRunning: true }),
        delay(STOP_WAIT_MS, undefined, { ref: false }).then(() =>
          log(`the deployment was still busy ${STOP_WAIT_MS / 1000} s after stopping: leaving it`),
        ),
      ]),
    );
    deployment.start();
    const run: Run = { env, admin, table, deployment, observer, load, options, interrupted };
    await waitUntil(`${NODE} Ready and schedulable`, () => nodeReady(admin), {
      timeoutMs: 120_000,
      intervalMs: 500,
      signal: interrupted,
    });
    log(
      `${NODE} Ready; bursts of ${options.bursts.join(', ')} pods; pod-sync reserved concurrency ${options.podSyncConcurrency}`,
    );

    let idle: WindowFigures | undefined;
    if (options.idleMs > 0) {
      log(`${options.idleMs / 1000} s with no pod: the deployment's fixed request rate`);
      const before = await counters(run);
      await delay(options.idleMs, undefined, { signal: interrupted });
      idle = windowFigures(before, await counters(run), '');
    }
    const results: BurstFigures[] = [];
    const file = join(benchDir, `pods-${new Date().toISOString().replaceAll(':', '-')}.json`);
    for (const n of options.bursts) {
      log(`burst of ${n} pods`);
      results.push(await runBurst(run, n));
      // Written after every burst, so an interrupted run keeps what it measured.
      writeFileSync(
        file,
        JSON.stringify(
          { argv: process.argv.slice(2), machine: machineSummary(), baseline, idle, results },
          null,
          2,
        ),
      );
    }
    const peakRss = process.resourceUsage().maxRSS / 1024;
    const text = `${report(results, baseline, idle)}\n\npod-sync reserved concurrency ${options.podSyncConcurrency}. Process peak RSS ${fixed(peakRss, 0)} MB. Raw figures: ${file}\n`;
    // The functions log on stdout too: the report is also kept apart from them.
    writeFileSync(file.replace(/\.json$/, '.md'), text);
    process.stdout.write(`\n${text}`);
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
