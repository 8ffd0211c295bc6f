/**
 * Pod pipeline benchmark (issue 4, "Measure"): bursts of N pods through the
 * whole deployment (pod-watch → local event bus → pod-sync → mock provider in
 * DynamoDB Local → pod-status → API server), at production cadence, on a real
 * local control plane.
 *
 * Usage: npx tsx bench/pods.ts [--pods 100,1000,10000] [--cap-minutes 20]
 *          [--delete-cap-minutes 10] [--concurrency 32]
 *          [--pod-sync-concurrency 10|unlimited]
 *
 * One LocalDeployment (schedules every 60 s, timeout 130 s, pod-sync's
 * reserved concurrency `--pod-sync-concurrency`, as in serverless.yml) serves one virtual node for the whole run. Per burst: a
 * fresh namespace, N pods created with `spec.nodeName` already set (so the
 * scheduler is not measured, only our pipeline), `--concurrency` creates in
 * flight, until every pod is Running in the API server or `--cap-minutes`
 * passes; then the namespace is deleted and the benchmark waits until the
 * provider and the known-pod records have none of its pods left (or
 * `--delete-cap-minutes` passes) before the next burst.
 *
 * Everything is measured from outside the code under test:
 * - bound = when our create call returned; provider create = the mock
 *   record's `createdAt`; Running = when a watch on the namespace first saw
 *   phase Running;
 * - requests: every HTTP request of this process, through
 *   node:diagnostics_channel, attributed to the function whose invocation
 *   sent it (the local runtime's AsyncLocalStorage scope) or to the benchmark
 *   itself; cross-checked with kube-apiserver's `apiserver_request_total`,
 *   which also counts the controller-manager and scheduler;
 * - events: a second rule on the deployment's bus (the bus keeps only the
 *   newest 10,000 in `published`); pod-sync invocations: the runtime's
 *   onResult.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { systemClock } from '../lib/clock.ts';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../lib/events/pod-event.ts';
import {
  apiStatusCode,
  createKubeClients,
  isNotFound,
  type KubeClients,
  loadKubeConfig,
} from '../lib/kube/client.ts';
import { currentInvocation } from '../lib/local/invocation-scope.ts';
import type { InvocationResult } from '../lib/local/lambda-function.ts';
import {
  DEFAULT_POD_SYNC_CONCURRENCY,
  LocalDeployment,
  type PodSyncConcurrency,
  parsePodSyncConcurrency,
} from '../lib/local/local-deployment.ts';
import { KnownPodStore } from '../lib/pod/known-pods.ts';
import { mockPodKey } from '../lib/provider/mock/mock-pod-record.ts';
import { MockPodProvider } from '../lib/provider/mock/mock-pods.ts';
import { createDynamoDbClient, StateTable } from '../lib/state/dynamodb.ts';
import { createTable } from '../lib/state/table-definition.ts';
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
  resumingWatch,
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
/** The deployment's functions; anything else in this process is the benchmark. */
const FUNCTIONS = ['pod-watch', 'pod-sync', 'pod-status', 'heartbeat'] as const;
const BENCH = 'bench';
/** The whole machine's busy CPU time, beside the processes'. */
const MACHINE = 'machine';
/** Progress is recorded this often during a burst, to show stalls. */
const TIMELINE_MS = 5_000;
const STOP_WAIT_MS = 30_000;

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
  };
}

// ---------------------------------------------------------------------------
// What the deployment does, counted from outside

/** Whose request this is: the function of the current local-runtime invocation, or the benchmark. */
function requester(): string {
  return currentInvocation()?.functionName ?? BENCH;
}

/** Every counter the benchmark reads before and after a window. */
interface Counters {
  /** `<requester> <VERB resource>` of Kubernetes API requests. */
  kube: Map<string, number>;
  /** `<requester> <Operation>` of DynamoDB requests. */
  dynamo: Map<string, number>;
  /** `<namespace> <type>` of events accepted by the bus. */
  events: Map<string, number>;
  /** `<function> <status>[ <outcome>]` of finished invocations. */
  invocations: Map<string, number>;
  deadLetters: number;
  /** apiserver_request_total by `VERB resource[/subresource]`, all clients. */
  apiserver: Map<string, number>;
  /** CPU seconds: this process and each component. */
  cpu: Map<string, number>;
  /** Answer times by the same keys as `kube` and `dynamo`. */
  latencies: Map<string, RequestLatency>;
  at: number;
}

class Observer {
  readonly kube = new HttpRequestCounter((request) => {
    // DynamoDB's requests go to "/" and have no Kubernetes kind.
    const kind = kubeRequestKind(request.method, request.path);
    return kind === undefined ? undefined : `${requester()} ${kind}`;
  });
  readonly dynamo = new HttpRequestCounter((request) => {
    const operation = dynamoDbOperation(request);
    return operation === undefined ? undefined : `${requester()} ${operation}`;
  });
  readonly events = new Map<string, number>();
  readonly invocations = new Map<string, number>();
  /** Provider creates reported by pod-sync, per namespace: live progress without reading DynamoDB. */
  readonly createdByNamespace = new Map<string, number>();
  lastActivityAt = performance.now();
  rssPeak = 0;
  heapPeak = 0;

  onEvent(namespace: string, type: string): void {
    bump(this.events, `${namespace} ${type}`);
    this.lastActivityAt = performance.now();
  }

  onResult(fn: string, outcome: InvocationResult): void {
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
    if (fn === 'pod-sync') this.lastActivityAt = performance.now();
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
  admin: KubeClients;
  table: StateTable;
  deployment: LocalDeployment;
  observer: Observer;
  options: Options;
  interrupted: AbortSignal;
}

async function counters(run: Run): Promise<Counters> {
  const { env, admin, observer, deployment } = run;
  const apiserver = await scrapeApiserverRequests(admin.config, env.controlPlane.server).catch(
    (err: unknown) => {
      log(`scraping /metrics failed: ${String(err)}`);
      return new Map<string, number>();
    },
  );
  const cpu = processCpuSeconds(env.pids);
  const usage = process.cpuUsage();
  cpu.set(BENCH, (usage.user + usage.system) / 1e6);
  cpu.set(MACHINE, machineBusySeconds());
  return {
    kube: observer.kube.snapshot(),
    dynamo: observer.dynamo.snapshot(),
    events: new Map(observer.events),
    invocations: new Map(observer.invocations),
    deadLetters: deployment.bus.deadLetters.length,
    apiserver,
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
  /** By type, for the burst's namespace only. */
  events: Record<string, number>;
  invocations: Record<string, number>;
  deadLetters: number;
  apiserver: Record<string, number>;
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
    events,
    invocations: Object.fromEntries(diffCounts(after.invocations, before.invocations)),
    deadLetters: after.deadLetters - before.deadLetters,
    apiserver: Object.fromEntries(diffCounts(after.apiserver, before.apiserver)),
    cpuSeconds,
    latencyMs: Object.fromEntries(
      [...diffLatencies(after.latencies, before.latencies)].map(([key, l]) => [
        key,
        { count: l.count, mean: l.totalMs / l.count, max: l.maxMs },
      ]),
    ),
  };
}

/** Sum of the entries whose `<requester> ...` key belongs to `who` (a function, `bench`, or `*` for the deployment). */
function byRequester(counts: Record<string, number>, who: string): number {
  return sumCounts(new Map(Object.entries(counts)), (key) => {
    const owner = key.slice(0, key.indexOf(' '));
    return who === '*' ? owner !== BENCH : owner === who;
  });
}

// ---------------------------------------------------------------------------
// Watching the burst's pods

type PodTimes = { runningAt?: number };

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
  create: WindowFigures;
  rssPeakMb: number;
  heapPeakMb: number;
  deletion: {
    /** Seconds from the namespace delete to no provider pod / no known-pod record / namespace gone; undefined when not reached. */
    providerEmptyS?: number;
    knownEmptyS?: number;
    namespaceGoneS?: number;
    providerLeft: number;
    knownLeft: number;
    window: WindowFigures;
  };
}

async function createNamespace(admin: KubeClients, name: string): Promise<void> {
  await admin.core.createNamespace({ body: { metadata: { name } } });
  // 1.20's ServiceAccount admission refuses pods until the default account has its token.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const sa = await admin.core.readNamespacedServiceAccount({ name: 'default', namespace: name });
      if ((sa.secrets?.length ?? 0) > 0) return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (Date.now() > deadline) throw new Error(`the default service account of ${name} got no token in 60 s`);
    await delay(250);
  }
}

function podBody(name: string, node = NODE): V1Pod {
  return {
    metadata: { name },
    spec: {
      nodeName: node,
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
    },
  };
}

/** Retries what may pass on a second try (5xx, 429, no answer); a 409 after a first try means it went through. */
async function withRetries<T>(call: () => Promise<T>, alreadyDone: () => T | Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const code = apiStatusCode(err);
      if (code === 409 && attempt > 1) return await alreadyDone();
      if (attempt >= 5 || (code !== undefined && code < 500 && code !== 429)) throw err;
      await delay(500 * attempt);
    }
  }
}

/** Creates pod `name`; the epoch ms when the API server had it. */
function createPod(admin: KubeClients, namespace: string, name: string, node = NODE): Promise<number> {
  return withRetries(
    async () => {
      await admin.core.createNamespacedPod({ namespace, body: podBody(name, node) });
      return Date.now();
    },
    () => Date.now(),
  );
}

/** Runs `work` on every index from 0 to n - 1 with `concurrency` in flight; counts the failures (logged). */
async function forEachLimited(
  n: number,
  concurrency: number,
  signal: AbortSignal,
  work: (i: number) => Promise<void>,
): Promise<number> {
  let failures = 0;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n && !signal.aborted; i = next++) {
      try {
        await work(i);
      } catch (err) {
        failures++;
        log(`item ${i} failed: ${String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return failures;
}

async function nodeReady(admin: KubeClients): Promise<boolean> {
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

async function runBurst(run: Run, n: number): Promise<BurstFigures> {
  const { admin, table, observer, options, interrupted } = run;
  const namespace = `burst-${n}-${randomBytes(3).toString('hex')}`;
  await createNamespace(admin, namespace);
  const names = Array.from({ length: n }, (_, i) => `p-${String(i).padStart(5, '0')}`);
  const boundAt = new Map<string, number>();
  const times = new Map<string, PodTimes>(names.map((name) => [name, {}]));
  let running = 0;
  const watch = await resumingWatch(
    admin.config,
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (type, object) => {
      const pod = object as V1Pod;
      const entry = times.get(pod.metadata?.name ?? '');
      if (!entry || type === 'DELETED' || entry.runningAt !== undefined) return;
      if (pod.status?.phase === 'Running') {
        entry.runningAt = Date.now();
        running++;
      }
    },
    log,
  );

  let notReady = 0;
  const progress = setInterval(() => {
    const created = observer.createdByNamespace.get(namespace) ?? 0;
    log(
      `${n}: ${boundAt.size} bound, ${created} created in provider, ${running} Running, ` +
        `${run.deployment.runtime.runningCount('pod-sync')} pod-sync running`,
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
    if (timelineStart === 0) return;
    timeline.push([
      Math.round((performance.now() - timelineStart) / 1000),
      boundAt.size,
      observer.createdByNamespace.get(namespace) ?? 0,
      running,
    ]);
  }, TIMELINE_MS);

  try {
    const before = await counters(run);
    const startedAt = Date.now();
    timelineStart = performance.now();
    const failures = await forEachLimited(n, options.concurrency, interrupted, async (i) => {
      const name = names[i] ?? '';
      try {
        boundAt.set(name, await createPod(admin, namespace, name));
      } catch (err) {
        times.delete(name);
        throw err;
      }
    });
    const createdAt = Date.now();
    log(`${n}: ${boundAt.size} pods created in ${((createdAt - startedAt) / 1000).toFixed(1)} s`);

    const allRunning = await waitUntil('every pod Running', () => running >= boundAt.size, {
      timeoutMs: Math.max(0, startedAt + options.capMs - Date.now()),
      intervalMs: 100,
      signal: interrupted,
    });
    const runningTimes = [...times.values()].flatMap((t) => (t.runningAt === undefined ? [] : [t.runningAt]));
    const lastRunningAt = Math.max(...runningTimes, startedAt);
    log(
      `${n}: ${running}/${boundAt.size} Running after ${((lastRunningAt - startedAt) / 1000).toFixed(1)} s`,
    );
    // A capped burst is still busy: its window ends now.
    if (allRunning) await waitQuiet(run);
    const after = await counters(run);

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
    const toRunning = [...times].flatMap(([name, t]) => {
      const bound = boundAt.get(name);
      return t.runningAt === undefined || bound === undefined ? [] : [t.runningAt - bound];
    });
    const create = windowFigures(before, after, namespace);
    clearInterval(recorder);
    const rssPeakMb = observer.rssPeak / 2 ** 20;
    const heapPeakMb = observer.heapPeak / 2 ** 20;
    watch.stop();

    const deletion = await deleteBurst(run, namespace, n);
    return {
      pods: n,
      namespace,
      created: boundAt.size,
      createFailures: failures,
      running,
      providerCreated: records.length,
      doubleCreates,
      allRunning,
      createSeconds: (createdAt - startedAt) / 1000,
      runningSeconds: (lastRunningAt - startedAt) / 1000,
      toProvider: distribution(toProvider.map((ms) => ms / 1000)),
      toRunning: distribution(toRunning.map((ms) => ms / 1000)),
      timeline,
      nodeNotReadySamples: notReady,
      create,
      rssPeakMb,
      heapPeakMb,
      deletion,
    };
  } finally {
    watch.stop();
    clearInterval(progress);
    clearInterval(sampler);
    clearInterval(recorder);
  }
}

/** Deletes the namespace and waits until the provider, the known-pod records and the API server have none of it. */
async function deleteBurst(run: Run, namespace: string, n: number): Promise<BurstFigures['deletion']> {
  const { admin, table, options, interrupted } = run;
  const provider = new MockPodProvider({ table, clock: systemClock });
  const knownPods = new KnownPodStore(table);
  const before = await counters(run);
  const started = performance.now();
  await admin.core.deleteNamespace({ name: namespace });
  const since = () => (performance.now() - started) / 1000;
  let providerEmptyS: number | undefined;
  let knownEmptyS: number | undefined;
  let namespaceGoneS: number | undefined;
  let providerLeft = Number.NaN;
  let knownLeft = Number.NaN;
  let lastLog = performance.now();
  await waitUntil(
    `${namespace} to be gone`,
    async () => {
      const [live, known] = await Promise.all([provider.listPods(NODE), knownPods.list(NODE)]);
      providerLeft = live.filter((p) => p.metadata?.namespace === namespace).length;
      knownLeft = known.filter((k) => k.namespace === namespace).length;
      if (providerLeft === 0) providerEmptyS ??= since();
      if (knownLeft === 0) knownEmptyS ??= since();
      if (namespaceGoneS === undefined) {
        try {
          await admin.core.readNamespace({ name: namespace });
        } catch (err) {
          if (!isNotFound(err)) throw err;
          namespaceGoneS = since();
        }
      }
      if (performance.now() - lastLog > PROGRESS_MS) {
        lastLog = performance.now();
        log(`deleting ${namespace}: ${providerLeft} in provider, ${knownLeft} known pods left`);
      }
      return providerEmptyS !== undefined && knownEmptyS !== undefined && namespaceGoneS !== undefined;
    },
    // Each round lists every pod of the node twice: keep big bursts from polling DynamoDB Local hard.
    { timeoutMs: options.deleteCapMs, intervalMs: Math.max(2_000, n), signal: interrupted },
  );
  if (providerEmptyS !== undefined && knownEmptyS !== undefined) await waitQuiet(run);
  const after = await counters(run);
  return {
    ...(providerEmptyS === undefined ? {} : { providerEmptyS }),
    ...(knownEmptyS === undefined ? {} : { knownEmptyS }),
    ...(namespaceGoneS === undefined ? {} : { namespaceGoneS }),
    providerLeft,
    knownLeft,
    window: windowFigures(before, after, namespace),
  };
}

// ---------------------------------------------------------------------------
// What this box can do without us

const BASELINE_NODE = 'bench-pods-baseline';

interface BaselineFigures {
  pods: number;
  /** From the first create to the last status write returning. */
  seconds: number;
  failures: number;
  cpuSeconds: Record<string, number>;
}

/**
 * kwok's work on this box: create `n` pods bound to a node nobody serves and
 * write each one's status Running once (one create and one status write per
 * pod, nothing persisted elsewhere), `concurrency` pods in flight. Runs before
 * the deployment starts, against a Node object of its own (so the pod garbage
 * collector leaves the pods alone), and removes everything afterwards.
 */
async function runBaseline(
  env: BenchEnvironment,
  admin: KubeClients,
  n: number,
  options: Options,
  interrupted: AbortSignal,
): Promise<BaselineFigures> {
  const namespace = `baseline-${n}-${randomBytes(3).toString('hex')}`;
  await admin.core.createNode({ body: { metadata: { name: BASELINE_NODE } } });
  await createNamespace(admin, namespace);
  const cpu = () => {
    const c = processCpuSeconds(env.pids);
    const usage = process.cpuUsage();
    c.set(BENCH, (usage.user + usage.system) / 1e6);
    c.set(MACHINE, machineBusySeconds());
    return c;
  };
  const cpuBefore = cpu();
  const started = performance.now();
  const failures = await forEachLimited(n, options.concurrency, interrupted, async (i) => {
    const name = `b-${String(i).padStart(5, '0')}`;
    const pod = await withRetries(
      () => admin.core.createNamespacedPod({ namespace, body: podBody(name, BASELINE_NODE) }),
      () => admin.core.readNamespacedPod({ namespace, name }),
    );
    const now = new Date();
    await withRetries(
      () =>
        admin.core.replaceNamespacedPodStatus({
          namespace,
          name,
          body: {
            ...pod,
            status: {
              ...pod.status,
              phase: 'Running',
              podIP: '10.0.0.2',
              startTime: now,
              conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
            },
          },
        }),
      () => pod,
    );
  });
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpu();
  const cpuSeconds: Record<string, number> = {};
  for (const [name, value] of cpuAfter) cpuSeconds[name] = value - (cpuBefore.get(name) ?? value);
  log(`baseline: ${n - failures} pods created and Running in ${seconds.toFixed(1)} s`);
  // No kubelet: the pods must go at once (grace 0), or they would wait for one forever.
  await admin.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  await admin.core.deleteNamespace({ name: namespace });
  await admin.core.deleteNode({ name: BASELINE_NODE });
  await waitUntil(
    `${namespace} to be gone`,
    async () => {
      try {
        await admin.core.readNamespace({ name: namespace });
        return false;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    },
    { timeoutMs: 5 * 60_000, intervalMs: 1_000, signal: interrupted },
  );
  return { pods: n, seconds, failures, cpuSeconds };
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

function report(bursts: readonly BurstFigures[], baseline: BaselineFigures | undefined): string {
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
      ];
    }),
  );
  const cost = markdownTable(
    [
      'pods',
      'API req/pod: ours (pod-watch / pod-sync / pod-status / heartbeat)',
      'API req/pod, apiserver (all clients, no WATCH) − bench',
      'DynamoDB req/pod (pod-watch / pod-sync / pod-status / heartbeat)',
      'events/pod (ADDED / MODIFIED)',
      'pod-sync invocations/pod',
      'failed invocations, dead letters',
    ],
    bursts.map((b) => {
      const w = b.create;
      const n = b.created;
      const split = (counts: Record<string, number>) =>
        `${perPod(byRequester(counts, '*'), n)} (${FUNCTIONS.map((f) =>
          perPod(byRequester(counts, f), n),
        ).join(' / ')})`;
      const apiserverTotal = sumCounts(new Map(Object.entries(w.apiserver)), (k) => !k.startsWith('WATCH'));
      const benchKube = sumCounts(
        new Map(Object.entries(w.kube)),
        (k) => k.startsWith(`${BENCH} `) && !k.includes(' WATCH '),
      );
      const events = sumCounts(new Map(Object.entries(w.events)));
      const syncs = sumCounts(new Map(Object.entries(w.invocations)), (k) => k.startsWith('pod-sync '));
      const failed = sumCounts(
        new Map(Object.entries(w.invocations)),
        (k) => k.startsWith('pod-sync ') && !k.startsWith('pod-sync ok'),
      );
      return [
        String(b.pods),
        split(w.kube),
        perPod(apiserverTotal - benchKube, n),
        split(w.dynamo),
        `${perPod(events, n)} (${perPod(w.events.ADDED ?? 0, n)} / ${perPod(w.events.MODIFIED ?? 0, n)})`,
        perPod(syncs, n),
        `${failed}, ${w.deadLetters}`,
      ];
    }),
  );
  const resources = markdownTable(
    [
      'pods',
      'window (s)',
      'CPU s: this process (deployment + bench)',
      'kube-apiserver',
      'etcd',
      'controller-manager',
      'DynamoDB Local',
      'CPU s per pod (all)',
      'peak RSS (MB)',
      'peak heap (MB)',
      'machine busy (CPU s)',
      'of which not ours',
      'node not Ready samples',
    ],
    bursts.map((b) => {
      const c = b.create.cpuSeconds;
      const all = Object.entries(c)
        .filter(([name]) => name !== MACHINE)
        .reduce((a, [, v]) => a + v, 0);
      const machine = c[MACHINE] ?? Number.NaN;
      return [
        String(b.pods),
        fixed(b.create.seconds),
        fixed(c[BENCH] ?? Number.NaN),
        fixed(c['kube-apiserver'] ?? Number.NaN),
        fixed(c.etcd ?? Number.NaN),
        fixed(c['kube-controller-manager'] ?? Number.NaN),
        fixed(c['dynamodb-local'] ?? Number.NaN),
        `${fixed((all / Math.max(1, b.created)) * 1000, 1)} ms`,
        fixed(b.rssPeakMb, 0),
        fixed(b.heapPeakMb, 0),
        fixed(machine),
        fixed(Math.max(0, machine - all)),
        String(b.nodeNotReadySamples),
      ];
    }),
  );
  const deletion = markdownTable(
    [
      'pods',
      'provider empty after (s)',
      'known pods empty after (s)',
      'namespace gone after (s)',
      'API req/pod (ours)',
      'DynamoDB req/pod (ours)',
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
        perPod(byRequester(w.kube, '*'), n),
        perPod(byRequester(w.dynamo, '*'), n),
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
    const ours = Object.fromEntries(Object.entries(w.kube).filter(([k]) => !k.startsWith(`${BENCH} `)));
    const oursDynamo = Object.fromEntries(
      Object.entries(w.dynamo).filter(([k]) => !k.startsWith(`${BENCH} `)),
    );
    return [
      `- ${b.pods} pods (namespace ${b.namespace}; ${b.createFailures} creates failed, ` +
        `${b.providerCreated} in the provider, ${b.doubleCreates} created twice there):`,
      `  - API requests/pod by function and kind: ${topEntries(ours, n)}`,
      `  - apiserver_request_total/pod (all clients): ${topEntries(w.apiserver, n)}`,
      `  - DynamoDB requests/pod by function and operation: ${topEntries(oursDynamo, n)}`,
      `  - invocations/pod: ${topEntries(w.invocations, n)}`,
      `  - answer times, mean / max (ms), busiest kinds first: ${latencyText(w.latencyMs)}`,
      ...(b.runningSeconds >= 30
        ? [`  - bound/created in provider/Running: ${timelineText(b.timeline)}`]
        : []),
      `  - deletion: API ${topEntries(
        Object.fromEntries(
          Object.entries(b.deletion.window.kube).filter(([k]) => !k.startsWith(`${BENCH} `)),
        ),
        n,
        8,
      )}; invocations ${topEntries(b.deletion.window.invocations, n, 8)}`,
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
            Object.entries(baseline.cpuSeconds)
              .map(([name, v]) => `${name} ${fixed(v)}`)
              .join(', '),
          '',
        ]
      : []),
    latency,
    '',
    '### Cost per pod (window: first create until the pipeline is quiet after the last Running)',
    '',
    cost,
    '',
    '### Resources (same window; CPU in seconds)',
    '',
    resources,
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
  try {
    mkdirSync(benchDir, { recursive: true });
    const env = await startBenchEnvironment({ dir: join(benchDir, 'control-plane'), log });
    stops.push(() => env.stop());
    interrupted.throwIfAborted();

    const tableName = `svk-bench-pods-${Date.now().toString(36)}`;
    const { client, doc } = createDynamoDbClient({ endpoint: env.dynamo.endpoint, region: 'local' });
    await createTable(client, tableName);
    const table = new StateTable(doc, tableName);
    // The benchmark's own requests wait their turn under load; a 5 s bound would fail creates that succeed.
    const admin = createKubeClients(loadKubeConfig({ kubeconfigPath: env.controlPlane.adminKubeconfig }), {
      requestTimeoutMs: 120_000,
    });
    const largest = Math.max(...options.bursts);
    const baseline = options.baseline
      ? await runBaseline(env, admin, largest, options, interrupted)
      : undefined;
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
        observer.onResult(invocation.functionName, result);
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
    const run: Run = { env, admin, table, deployment, observer, options, interrupted };
    await waitUntil(`${NODE} Ready and schedulable`, () => nodeReady(admin), {
      timeoutMs: 120_000,
      intervalMs: 500,
      signal: interrupted,
    });
    log(
      `${NODE} Ready; bursts of ${options.bursts.join(', ')} pods; pod-sync reserved concurrency ${options.podSyncConcurrency}`,
    );

    const results: BurstFigures[] = [];
    const file = join(benchDir, `pods-${new Date().toISOString().replaceAll(':', '-')}.json`);
    for (const n of options.bursts) {
      log(`burst of ${n} pods`);
      results.push(await runBurst(run, n));
      // Written after every burst, so an interrupted run keeps what it measured.
      writeFileSync(
        file,
        JSON.stringify(
          { argv: process.argv.slice(2), machine: machineSummary(), baseline, results },
          null,
          2,
        ),
      );
    }
    const peakRss = process.resourceUsage().maxRSS / 1024;
    const text = `${report(results, baseline)}\n\npod-sync reserved concurrency ${options.podSyncConcurrency}. Process peak RSS ${fixed(peakRss, 0)} MB. Raw figures: ${file}\n`;
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
