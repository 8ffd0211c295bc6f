/**
 * The fault matrix: a steady workload (pods created and deleted continuously
 * over several virtual nodes) against the real pipeline, while faults are
 * injected one after another; per fault: NotReady node-seconds, pods lost,
 * pods created twice, time to converge after the fault ends, and dead letters.
 *
 *   npx tsx bench/faults.ts [--nodes 3] [--cadence tick|continuous] [--long] [--only dynamodb-60s,...] [--skip forced-410,...]
 *     [--dynamodb-freeze-s 60] [--dynamodb-long-freeze-s 600] [--apiserver-down-s 30] [--window-s 120] [--clock-skew-s 30]
 *
 * The cadence is serverless.yml's default, `tick` (the tick function chained
 * through its FIFO queue, the keeper every 60 s), unless --cadence says
 * `continuous` (the four functions scheduled every 60 s with 130 s timeouts).
 * The defaults are the matrix's own durations. The 10-minute DynamoDB freeze
 * runs only with --long (or when --only names it); the duration options
 * shorten faults for a quicker look, and the report prints the durations used.
 *
 * Runs on the same pipeline harness as the provider conformance suite
 * (test/harness/pipeline-harness.ts: the whole deployment in the local
 * runtime with its sandboxes in one killable process, the mock provider),
 * with a control plane and a DynamoDB Local of its own, and every period at
 * its production value (the harness shortens them for scenarios). The
 * functions reach kube-apiserver and DynamoDB Local through proxies on
 * loopback (test/support/fault-proxies.ts), which pass everything through
 * unless a fault delays or refuses it; the workload and the measuring reach
 * both directly. With the proxy in front, kube-apiserver stopped resets the
 * functions' connections instead of refusing them: the same network error
 * to the clients. The report (a markdown table) goes to stdout; progress to
 * stderr. Record it in docs/benchmarks.md, "Faults", with the machine, the
 * date and the load.
 *
 * Measured per fault, over the fault and until the pods it touched have
 * converged (or the convergence deadline):
 * - NotReady: node-seconds with Ready not True, sampled every second.
 * - lost: pods of the workload not in their desired state by the deadline:
 *   a live pod not Running in the API server or not held by the provider, a
 *   deleted pod still in the API server or still held by the provider.
 * - twice: pod uids the provider started more than once (its own counters).
 * - converge: from the fault's end until every pod created or deleted up to
 *   then is in its desired state.
 * - takeovers: pod-sync claims and locks taken from a holder that had not let
 *   go, early when before the claim's period or the lock's TTL had passed on
 *   the true clock (bench/takeovers.ts, from the writes the DynamoDB proxy saw).
 * - dead letters: pod events the bus gave up on, retried as serverless.yml
 *   deploys them (pod-sync's two Lambda retries, one and two minutes apart,
 *   within its maximum event age: lib/local/async-retry-policy.ts), so the
 *   count is what pod-sync's dead-letter queue would receive on AWS; the
 *   reconciler repairs what they missed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { Cadence } from '../lib/local/cadence.ts';
import { mapSettledLimit } from '../lib/util/map-limit.ts';
import { shell } from '../test/harness/harness-pods.ts';
import { PipelineHarness } from '../test/harness/pipeline-harness.ts';
import { mockProviderSetup } from '../test/harness/providers/mock.ts';
import {
  type DelayProxy,
  type DynamoFaultProxy,
  refuseAtRate,
  startDelayProxy,
  startDynamoFaultProxy,
  throttled,
  transactionConflict,
  WRITE_OPERATIONS,
} from '../test/support/fault-proxies.ts';
import { rotateServingCertificate } from '../test/support/serving-cert.ts';
import { WallClockSkew } from '../test/support/wall-clock-skew.ts';
import {
  type BenchEnvironment,
  benchLog,
  fixed,
  interruptSignal,
  machineSummary,
  markdownTable,
  startBenchEnvironment,
} from './support.ts';
import { type Stamps, type Takeover, TakeoverWatch } from './takeovers.ts';

const log = benchLog('faults');
const root = new URL('..', import.meta.url).pathname;

/** Every period at the default of its variable: the harness shortens them for scenarios. */
const PRODUCTION_PERIODS: Record<string, string> = {
  SVK_LOCK_TTL_SECONDS: '15',
  SVK_LOCK_POLL_MS: '1000',
  SVK_POD_CLAIM_SECONDS: '30',
  SVK_POD_STATUS_INTERVAL_SECONDS: '5',
  SVK_POD_DANGLING_INTERVAL_SECONDS: '300',
  SVK_RECONCILE_INTERVAL_SECONDS: '30',
  SVK_RECONCILE_RESYNC_GRACE_SECONDS: '60',
  SVK_RECONCILE_LEADER_WAIT_MS: '5000',
};

/** A pod every this often, on the nodes in turn. */
const CREATE_EVERY_MS = 2_000;
/** Each pod is deleted this long after it was created. */
const POD_LIFETIME_MS = 40_000;
/** How long after a fault ends its pods may take to converge before they count as lost. */
const CONVERGE_DEADLINE_MS = 5 * 60_000;
/** Workload before each fault, so that it runs into a steady state. */
const BASELINE_MS = 20_000;
const BURST = 30;

/** How long each timed fault lasts, in seconds. */
interface Durations {
  dynamodbFreezeS: number;
  dynamodbLongFreezeS: number;
  apiserverDownS: number;
  /** PutEvents failing, pod-sync throttled, deliveries disturbed, clocks apart. */
  windowS: number;
  /** How far apart two invocations' wall clocks are in clock-skew. */
  clockSkewS: number;
}

interface Args {
  nodes: number;
  cadence: Cadence;
  long: boolean;
  only?: Set<string>;
  skip: Set<string>;
  durations: Durations;
}

/** Faults left out unless --long is given or --only names them. */
const LONG_FAULTS = new Set(['dynamodb-10min']);

function parseArgs(argv: string[]): Args {
  const value = (flag: string) => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const list = (flag: string) => new Set((value(flag) ?? '').split(',').filter(Boolean));
  const seconds = (flag: string, fallback: number) => {
    const raw = value(flag);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0)
      throw new Error(`${flag} must be a positive number of seconds, got ${raw}`);
    return n;
  };
  const cadence = value('--cadence') ?? 'tick';
  if (cadence !== 'tick' && cadence !== 'continuous')
    throw new Error(`--cadence must be tick or continuous, got ${cadence}`);
  const only = list('--only');
  const known = new Set(faultNames());
  for (const name of [...only, ...list('--skip')])
    if (!known.has(name)) throw new Error(`unknown fault ${name}; the faults: ${[...known].join(', ')}`);
  return {
    nodes: Number(value('--nodes') ?? 3),
    cadence,
    long: argv.includes('--long'),
    ...(only.size > 0 ? { only } : {}),
    skip: list('--skip'),
    durations: {
      dynamodbFreezeS: seconds('--dynamodb-freeze-s', 60),
      dynamodbLongFreezeS: seconds('--dynamodb-long-freeze-s', 600),
      apiserverDownS: seconds('--apiserver-down-s', 30),
      windowS: seconds('--window-s', 120),
      clockSkewS: seconds('--clock-skew-s', 30),
    },
  };
}

function selected(args: Args, name: string): boolean {
  if (args.only) return args.only.has(name);
  return !args.skip.has(name) && (args.long || !LONG_FAULTS.has(name));
}

// ---------------------------------------------------------------------------
// The workload

interface WorkloadPod {
  name: string;
  node: string;
  uid?: string;
  /** When the API server accepted it. */
  createdAt?: number;
  /** When the workload asked the API server to delete it. */
  deletedAt?: number;
}

/**
 * Creates a pod every CREATE_EVERY_MS on the nodes in turn and deletes each
 * one POD_LIFETIME_MS later; a request the API server refuses (it may be
 * down) is retried on the next step, so every pod is eventually created and
 * deleted. `burst` creates many at once.
 */
class Workload {
  readonly pods = new Map<string, WorkloadPod>();
  #seq = 0;
  #running = false;
  #loop: Promise<void> | undefined;

  constructor(
    private readonly h: PipelineHarness,
    private readonly namespace: string,
  ) {}

  start(): void {
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }

  async burst(count: number): Promise<void> {
    const names = Array.from({ length: count }, () => this.#next());
    await mapSettledLimit(names, 10, (p) => this.#create(p));
  }

  async #run(): Promise<void> {
    while (this.#running) {
      const started = Date.now();
      await this.#create(this.#next()).catch(() => undefined);
      for (const p of this.pods.values()) {
        if (!p.createdAt) await this.#create(p).catch(() => undefined);
        else if (!p.deletedAt && Date.now() - p.createdAt >= POD_LIFETIME_MS)
          await this.#delete(p).catch(() => undefined);
      }
      await delay(Math.max(0, CREATE_EVERY_MS - (Date.now() - started)));
    }
  }

  #next(): WorkloadPod {
    const nodes = this.h.nodes;
    const pod: WorkloadPod = { name: `w${this.#seq}`, node: nodes[this.#seq % nodes.length] ?? '' };
    this.#seq++;
    this.pods.set(pod.name, pod);
    return pod;
  }

  async #create(p: WorkloadPod): Promise<void> {
    if (p.createdAt) return;
    const body: V1Pod = {
      metadata: { name: p.name },
      spec: this.h.pods.spec({
        nodeSelector: { 'kubernetes.io/hostname': p.node },
        terminationGracePeriodSeconds: 5,
        containers: [shell('main', 'sleep 3600')],
      }),
    };
    try {
      const created = await this.h.pods.create(this.namespace, body);
      p.uid = created.metadata?.uid ?? '';
      p.createdAt = Date.now();
    } catch (err) {
      // Created by an earlier try whose answer was lost: take it as it is.
      const existing = await this.h.pods.read(this.namespace, p.name).catch(() => undefined);
      if (!existing) throw err;
      p.uid = existing.metadata?.uid ?? '';
      p.createdAt = Date.now();
    }
  }

  async #delete(p: WorkloadPod): Promise<void> {
    await this.h.pods.delete(this.namespace, p.name).catch(async (err: unknown) => {
      if (await this.h.pods.read(this.namespace, p.name).catch(() => 'unknown')) throw err;
    });
    p.deletedAt = Date.now();
  }
}

// ---------------------------------------------------------------------------
// Measuring

/** Node-seconds with Ready not True, sampled every second while started. */
class ReadySampler {
  notReadySeconds = 0;
  samples = 0;
  #running = false;
  #loop: Promise<void> | undefined;

  constructor(private readonly h: PipelineHarness) {}

  start(): void {
    this.notReadySeconds = 0;
    this.samples = 0;
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        const started = Date.now();
        try {
          const nodes = (await this.h.admin.core.listNode()).items.filter((n) =>
            this.h.nodes.includes(n.metadata?.name ?? ''),
          );
          this.samples++;
          for (const name of this.h.nodes) {
            const node = nodes.find((n) => n.metadata?.name === name);
            const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
            if (ready !== 'True') this.notReadySeconds++;
          }
        } catch {
          // The API server is down (a fault): nobody can judge the node meanwhile; not counted.
        }
        await delay(Math.max(0, 1_000 - (Date.now() - started)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

/** The pods of `among` not yet in their desired state, by kind. */
async function unsettled(
  h: PipelineHarness,
  namespace: string,
  among: readonly WorkloadPod[],
): Promise<{ notRunning: string[]; notGone: string[]; leaked: string[] }> {
  const api = new Map((await h.pods.list(namespace)).map((p) => [p.metadata?.name ?? '', p]));
  const held = new Set<string>();
  for (const node of h.nodes) for (const p of await h.probe.pods(node)) held.add(p.uid);
  const notRunning: string[] = [];
  const notGone: string[] = [];
  const leaked: string[] = [];
  for (const p of among) {
    if (!p.uid) continue;
    const inApi = api.get(p.name);
    const apiHas = inApi?.metadata?.uid === p.uid;
    if (!p.deletedAt) {
      if (!apiHas || inApi?.status?.phase !== 'Running' || !held.has(p.uid)) notRunning.push(p.name);
    } else {
      if (apiHas) notGone.push(p.name);
      if (held.has(p.uid)) leaked.push(p.name);
    }
  }
  return { notRunning, notGone, leaked };
}

interface FaultResult {
  fault: string;
  description: string;
  durationS: number;
  notReadyNodeSeconds: number;
  lost: number;
  lostDetail: string;
  createdTwice: number;
  convergeS: number | undefined;
  /** Claims taken during the fault and until convergence, and those taken from a holder (early: within its period). */
  claims: number;
  /** Claim writes and lock writes refused by their condition (a lost race, a lock found held). */
  claimsRefused: number;
  lockWritesRefused: number;
  claimsTakenOver: number;
  claimsTakenOverEarly: number;
  locksTakenOver: number;
  locksTakenOverEarly: number;
  /** Claim and lock writes stamped ahead of, behind or on the true clock: the skew as the state table received it. */
  stamps: Stamps;
  deadLetters: number;
  pods: number;
  /** Why injecting the fault failed, if it did. */
  error?: string;
}

/** The pods the provider started more than once, among `pods`. */
async function createdTwice(
  h: PipelineHarness,
  namespace: string,
  pods: readonly WorkloadPod[],
): Promise<string[]> {
  const twice: string[] = [];
  await mapSettledLimit(pods, 8, async (p) => {
    if (!p.uid) return;
    const history = await h.probe.history({ namespace, name: p.name, uid: p.uid });
    if ((history?.creates ?? 0) > 1) twice.push(p.name);
  });
  return twice;
}

// ---------------------------------------------------------------------------
// Faults

interface FaultContext {
  env: BenchEnvironment;
  h: PipelineHarness;
  workload: Workload;
  /** In front of kube-apiserver for the functions (not for the workload and the sampler): passes through unless a fault delays it. */
  kubeProxy: DelayProxy;
  /** In front of DynamoDB Local for the functions: forwards everything unless a fault refuses. */
  dynamoProxy: DynamoFaultProxy;
  /** The functions' wall clocks, when the host process was forked to skew them (clock-skew selected). */
  clockSkew: WallClockSkew | undefined;
  /** Claims and locks taken over, from the writes the DynamoDB proxy saw. */
  takeovers: TakeoverWatch;
}

interface Fault {
  name: string;
  description: string;
  /** Injects the fault and resolves when it has ended (the system may then recover). */
  run(ctx: FaultContext): Promise<void>;
}

async function etcd(env: BenchEnvironment, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${env.controlPlane.ports.etcdClient}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`etcd ${path}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

function freezeDynamoDb(seconds: number): Fault['run'] {
  return async ({ env }) => {
    process.kill(env.dynamo.pid, 'SIGSTOP');
    try {
      await delay(seconds * 1_000);
    } finally {
      process.kill(env.dynamo.pid, 'SIGCONT');
    }
  };
}

function sum(counts: ReadonlyMap<string, number>): number {
  return [...counts.values()].reduce((a, n) => a + n, 0);
}

/** Refuses DynamoDB requests through the proxy with `refuse` for the window, and says how many it refused. */
function refuseDynamoDb(windowS: number, refuse: DynamoFaultProxy['refuse']): Fault['run'] {
  return async ({ dynamoProxy }) => {
    dynamoProxy.refused.clear();
    dynamoProxy.refuse = refuse;
    try {
      await delay(windowS * 1_000);
    } finally {
      dynamoProxy.refuse = undefined;
    }
    log(
      `refused ${sum(dynamoProxy.refused)} DynamoDB requests: ${JSON.stringify(Object.fromEntries(dynamoProxy.refused))}`,
    );
  };
}

const DEFAULT_DURATIONS: Durations = {
  dynamodbFreezeS: 60,
  dynamodbLongFreezeS: 600,
  apiserverDownS: 30,
  windowS: 120,
  clockSkewS: 30,
};

function faultNames(): string[] {
  return faults(DEFAULT_DURATIONS).map((f) => f.name);
}

/** The matrix, in the order it runs; names stay the same whatever the durations. */
function faults(d: Durations): Fault[] {
  const window = `${d.windowS} s`;
  return [
    {
      name: 'dynamodb-60s',
      description: `DynamoDB Local frozen (SIGSTOP) for ${d.dynamodbFreezeS} s`,
      run: freezeDynamoDb(d.dynamodbFreezeS),
    },
    {
      name: 'dynamodb-10min',
      description: `DynamoDB Local frozen (SIGSTOP) for ${d.dynamodbLongFreezeS} s`,
      run: freezeDynamoDb(d.dynamodbLongFreezeS),
    },
    {
      name: 'apiserver-30s',
      description: `kube-apiserver stopped for ${d.apiserverDownS} s`,
      run: async ({ env }) => {
        await env.controlPlane.stopApiServer();
        await delay(d.apiserverDownS * 1_000);
        await env.controlPlane.startApiServer();
        // As after a real outage of the control plane: the controllers relist at once.
        await env.controlPlane.restartControllers();
      },
    },
    {
      name: 'putevents-2min',
      description: `every PutEvents entry refused (ThrottlingException) for ${window}`,
      run: async ({ h }) => {
        h.deployment.bus.failEntries(() => true, 'ThrottlingException');
        await delay(d.windowS * 1_000);
        h.deployment.bus.failEntries(undefined);
      },
    },
    {
      name: 'podsync-throttled',
      description: `pod-sync throttled to 1 concurrent invocation for ${window}, a burst of ${BURST} pods at its start`,
      run: async ({ h, workload }) => {
        const handler = h.deployment.host?.handler('pod-sync');
        if (!handler) throw new Error('needs the host-process sandboxes');
        const register = (reservedConcurrency: number) =>
          h.deployment.runtime.register({
            name: 'pod-sync',
            handler,
            timeoutMs: 60_000,
            reservedConcurrency,
          });
        register(1);
        const started = Date.now();
        await workload.burst(BURST);
        await delay(Math.max(0, d.windowS * 1_000 - (Date.now() - started)));
        register(10);
      },
    },
    {
      name: 'deliveries',
      description: `every pod event delivered twice, batches shuffled, 20 % dropped, for ${window}`,
      run: async ({ h }) => {
        const bus = h.deployment.bus;
        bus.duplicate = 2;
        bus.reorder = 'shuffle';
        bus.drop(() => Math.random() < 0.2);
        await delay(d.windowS * 1_000);
        bus.duplicate = 1;
        bus.reorder = 'none';
        bus.drop(undefined);
      },
    },
    {
      name: 'kill-mid-burst',
      description: `every function SIGKILLed in the middle of a burst of ${BURST} pods`,
      run: async ({ h, workload }) => {
        const bursting = workload.burst(BURST);
        // Mid-burst: a third of the burst's creates answered.
        const before = workload.pods.size;
        const started = Date.now();
        while (Date.now() - started < 60_000) {
          const answered = [...workload.pods.values()]
            .slice(before - BURST)
            .filter((p) => p.createdAt).length;
          if (answered >= BURST / 3) break;
          await delay(50);
        }
        await h.killFunctions();
        await bursting;
      },
    },
    {
      name: 'forced-410',
      description: "etcd compacted and kube-apiserver restarted: every watcher's bookmark expires (410)",
      run: async ({ env }) => {
        const header = (await etcd(env, '/v3/kv/range', { key: 'AA==' })).header as { revision: string };
        await etcd(env, '/v3/kv/compaction', { revision: header.revision, physical: true });
        await env.controlPlane.stopApiServer();
        await env.controlPlane.startApiServer();
        await env.controlPlane.restartControllers();
      },
    },
    {
      name: 'apiserver-sigstop',
      description: `kube-apiserver stalled (SIGSTOP, connections accepted, no answer) for ${d.apiserverDownS} s`,
      run: async ({ env }) => {
        // The pid file as it is now: forced-410 restarts kube-apiserver, so the pid read at start is gone.
        const pid = Number(readFileSync(join(env.controlPlane.dir, 'pids', 'kube-apiserver.pid'), 'utf8'));
        if (!pid) throw new Error('no kube-apiserver pid');
        process.kill(pid, 'SIGSTOP');
        try {
          await delay(d.apiserverDownS * 1_000);
        } finally {
          process.kill(pid, 'SIGCONT');
        }
      },
    },
    {
      name: 'apiserver-slow',
      description: `kube-apiserver behind a proxy holding every chunk 1 s each way, for ${window}`,
      run: async ({ kubeProxy }) => {
        kubeProxy.delayMs = 1_000;
        try {
          await delay(d.windowS * 1_000);
        } finally {
          kubeProxy.delayMs = 0;
        }
      },
    },
    {
      name: 'dynamodb-throttled',
      description: `half the DynamoDB requests refused (ProvisionedThroughputExceededException, ThrottlingException) for ${window}`,
      run: (ctx) => {
        let turn = 0;
        return refuseDynamoDb(
          d.windowS,
          refuseAtRate(0.5, () =>
            throttled(turn++ % 2 === 0 ? 'ProvisionedThroughputExceededException' : 'ThrottlingException'),
          ),
        )(ctx);
      },
    },
    {
      name: 'dynamodb-conflicts',
      description: `a quarter of the DynamoDB writes refused as transaction conflicts for ${window}`,
      run: refuseDynamoDb(
        d.windowS,
        refuseAtRate(0.25, transactionConflict, { filter: (r) => WRITE_OPERATIONS.has(r.operation) }),
      ),
    },
    {
      name: 'putevents-partial',
      description: `every other PutEvents entry refused (FailedEntryCount > 0) for ${window}`,
      run: async ({ h }) => {
        let entries = 0;
        h.deployment.bus.failEntries(() => entries++ % 2 === 0, 'ThrottlingException');
        try {
          await delay(d.windowS * 1_000);
        } finally {
          h.deployment.bus.failEntries(undefined);
        }
      },
    },
    {
      name: 'cert-rotation',
      description: "kube-apiserver's serving certificate replaced (same CA) while the functions are warm",
      run: async ({ env, kubeProxy }) => {
        const rotated = await rotateServingCertificate({
          controlPlaneDir: env.controlPlane.dir,
          server: env.controlPlane.server,
          caFile: env.controlPlane.ca.cert,
        });
        log(
          `kube-apiserver serves ${rotated.after} (was ${rotated.before}) ${fixed(rotated.reloadMs / 1000)} s after the files changed`,
        );
        // Kept-alive connections would go on with the old certificate: dropped, so every function handshakes again.
        kubeProxy.resetConnections();
      },
    },
    {
      name: 'clock-skew',
      description: `wall clocks ${d.clockSkewS} s apart between invocations (each function's invocations ${d.clockSkewS / 2} s ahead and behind in turn), every pod event delivered twice, for ${window}`,
      run: async ({ clockSkew, h }) => {
        if (!clockSkew) throw new Error('needs the host process forked with the wall clock skew');
        const halfMs = Math.round((d.clockSkewS * 1_000) / 2);
        clockSkew.set([halfMs, -halfMs]);
        // The two copies of an event go to pod-sync invocations in turn, so on clocks apart: they race for the pod's claim.
        h.deployment.bus.duplicate = 2;
        try {
          await delay(d.windowS * 1_000);
        } finally {
          h.deployment.bus.duplicate = 1;
          clockSkew.set([]);
        }
      },
    },
  ];
}

/** A writer's clock against the true one, as `+15.0 s`, or `?` when its write carried no stamp. */
function clockText(ms: number | undefined): string {
  return ms === undefined ? '?' : `${ms >= 0 ? '+' : ''}${fixed(ms / 1000)} s`;
}

async function measure(ctx: FaultContext, namespace: string, fault: Fault): Promise<FaultResult> {
  const { h, workload } = ctx;
  const sampler = new ReadySampler(h);
  await delay(BASELINE_MS);
  const deadLettersBefore = h.deployment.bus.deadLetters.length;
  const takeoversBefore = ctx.takeovers.takeovers.length;
  const claimsBefore = ctx.takeovers.claims;
  const stampsBefore = { ...ctx.takeovers.stamps };
  const refusedBefore = { claims: ctx.takeovers.claimsRefused, locks: ctx.takeovers.lockWritesRefused };
  const firstPod = workload.pods.size;
  sampler.start();
  const startedAt = Date.now();
  log(`${fault.name}: ${fault.description}`);
  let error: string | undefined;
  try {
    await fault.run(ctx);
  } catch (err) {
    // Measured all the same: the system must recover from a half-injected fault too.
    error = err instanceof Error ? err.message : String(err);
    log(`${fault.name}: injecting failed: ${error}`);
  }
  const endedAt = Date.now();
  log(`${fault.name}: ended after ${fixed((endedAt - startedAt) / 1000)} s; waiting for convergence`);
  // Every pod alive at some time of the fault, or asked for during it (the burst's too), held to
  // its desired state as it is when checked (a pod deleted since must be gone).
  const alive = POD_LIFETIME_MS / CREATE_EVERY_MS;
  const snapshot = [...workload.pods.values()].filter(
    (p, i) => i >= firstPod - alive && (p.createdAt === undefined || p.createdAt <= endedAt),
  );
  const touched = () => snapshot;
  let convergeS: number | undefined;
  let last = { notRunning: [] as string[], notGone: [] as string[], leaked: [] as string[] };
  while (Date.now() - endedAt < CONVERGE_DEADLINE_MS) {
    last = await unsettled(h, namespace, touched()).catch(() => last);
    if (last.notRunning.length + last.notGone.length + last.leaked.length === 0) {
      convergeS = (Date.now() - endedAt) / 1000;
      break;
    }
    await delay(2_000);
  }
  await sampler.stop();
  const pods = touched();
  const twice = await createdTwice(h, namespace, pods);
  const lost = last.notRunning.length + last.notGone.length + last.leaked.length;
  const takeovers = ctx.takeovers.takeovers.slice(takeoversBefore);
  for (const t of takeovers.filter((t) => t.early))
    log(
      `${fault.name}: ${t.kind} ${t.key} taken over ${fixed(t.afterMs / 1000)} s after its holder's last write: ${t.from} -> ${t.to}; their clocks ${clockText(t.fromClockMs)} -> ${clockText(t.toClockMs)}`,
    );
  const count = (kind: Takeover['kind'], early: boolean) =>
    takeovers.filter((t) => t.kind === kind && (!early || t.early)).length;
  const result: FaultResult = {
    fault: fault.name,
    description: fault.description,
    durationS: (endedAt - startedAt) / 1000,
    notReadyNodeSeconds: sampler.notReadySeconds,
    lost: convergeS === undefined ? lost : 0,
    lostDetail:
      convergeS === undefined
        ? `not Running: ${last.notRunning.join(' ')}; not gone: ${last.notGone.join(' ')}; leaked: ${last.leaked.join(' ')}`
        : '',
    createdTwice: twice.length,
    convergeS,
    claims: ctx.takeovers.claims - claimsBefore,
    claimsRefused: ctx.takeovers.claimsRefused - refusedBefore.claims,
    lockWritesRefused: ctx.takeovers.lockWritesRefused - refusedBefore.locks,
    claimsTakenOver: count('claim', false),
    claimsTakenOverEarly: count('claim', true),
    locksTakenOver: count('lock', false),
    locksTakenOverEarly: count('lock', true),
    stamps: {
      ahead: ctx.takeovers.stamps.ahead - stampsBefore.ahead,
      behind: ctx.takeovers.stamps.behind - stampsBefore.behind,
      onTime: ctx.takeovers.stamps.onTime - stampsBefore.onTime,
    },
    deadLetters: h.deployment.bus.deadLetters.length - deadLettersBefore,
    pods: pods.length,
    ...(error ? { error } : {}),
  };
  log(`${fault.name}: ${JSON.stringify(result)}`);
  return result;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const loadBefore = loadavg();
  const startedAt = Date.now();
  const signal = interruptSignal(log);
  const dir = join(root, '.local', `bench-faults-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const env = await startBenchEnvironment({ dir: join(dir, 'control-plane'), log });
  let h: PipelineHarness | undefined;
  let workload: Workload | undefined;
  const apiserver = new URL(env.controlPlane.server);
  const kubeProxy = await startDelayProxy({ host: apiserver.hostname, port: Number(apiserver.port) });
  const dynamoProxy = await startDynamoFaultProxy(env.dynamo.endpoint);
  const takeovers = new TakeoverWatch(Number(PRODUCTION_PERIODS.SVK_POD_CLAIM_SECONDS) * 1_000);
  dynamoProxy.observe = (request, status) => takeovers.observe(request, status);
  // Only a run that skews the clocks forks the sandboxes with the skewing module.
  const clockSkew = selected(args, 'clock-skew') ? new WallClockSkew(dir) : undefined;
  // The functions' kubeconfig names the proxy; the certificate names 127.0.0.1 whatever the port.
  const kubeletKubeconfig = join(dir, 'kubelet-through-proxy.kubeconfig');
  writeFileSync(
    kubeletKubeconfig,
    readFileSync(env.controlPlane.kubeletKubeconfig, 'utf8').replaceAll(
      `https://${apiserver.host}`,
      `https://${kubeProxy.address}`,
    ),
    { mode: 0o600 },
  );
  const results: FaultResult[] = [];
  let code = 0;
  try {
    h = await PipelineHarness.start({
      environment: {
        kube: {
          adminKubeconfig: env.controlPlane.adminKubeconfig,
          kubeletKubeconfig,
        },
        dynamodb: { endpoint: env.dynamo.endpoint, region: 'local' },
      },
      provider: mockProviderSetup(),
      nodeCount: args.nodes,
      nodePrefix: 'fault',
      env: { ...PRODUCTION_PERIODS, SVK_DYNAMODB_ENDPOINT: dynamoProxy.endpoint },
      // serverless.yml's schedules (the tick keeper's, or the continuous functions' with their
      // timeout) and pod-sync's reserved concurrency.
      cadence: args.cadence,
      rateMs: 60_000,
      timeoutMs: 130_000,
      podSyncConcurrency: 10,
      syncRetries: 'deployed',
      readyTimeoutMs: 180_000,
      ...(clockSkew ? { hostProcess: clockSkew.hostProcess } : {}),
    });
    const namespace = await h.namespace('load');
    workload = new Workload(h, namespace);
    workload.start();
    for (const fault of faults(args.durations)) {
      if (signal.aborted) break;
      if (!selected(args, fault.name)) continue;
      results.push(
        await measure({ env, h, workload, kubeProxy, dynamoProxy, clockSkew, takeovers }, namespace, fault),
      );
      writeFileSync(join(dir, 'results.json'), JSON.stringify(results, null, 2));
    }
  } catch (err) {
    // The faults measured so far are still reported.
    log(`stopped early: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    code = 1;
  } finally {
    await workload?.stop();
    await h?.stop({ drainTimeoutMs: 120_000 }).catch((err: unknown) => log(`harness stop: ${String(err)}`));
    await kubeProxy.stop();
    await dynamoProxy.stop();
    await env.stop();
  }
  // Which functions actually ran shows the cadence the run measured.
  const invocations = h
    ? Object.entries(h.invocations.snapshot())
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')
    : '';
  const load = (l: number[]) => l.map((n) => n.toFixed(2)).join(' ');
  const run = `${fixed((Date.now() - startedAt) / 60_000)} min; load average (1/5/15 min) ${load(loadBefore)} at the start, ${load(loadavg())} at the end`;
  process.stdout.write(report(results, args, run, invocations));
  return code;
}

function report(results: readonly FaultResult[], args: Args, run: string, invocations: string): string {
  const rows = results.map((r) => [
    `${r.fault}: ${r.description}`,
    fixed(r.durationS, 0),
    String(r.notReadyNodeSeconds),
    String(r.lost),
    String(r.createdTwice),
    r.convergeS === undefined ? `not within ${CONVERGE_DEADLINE_MS / 60_000} min` : fixed(r.convergeS, 0),
    String(r.deadLetters),
    String(r.pods),
  ]);
  const lost = results.filter((r) => r.lostDetail).map((r) => `- ${r.fault}: ${r.lostDetail}`);
  const errors = results.filter((r) => r.error).map((r) => `- ${r.fault}: ${r.error}`);
  const takeovers = results.map(
    (r) =>
      `- ${r.fault}: claims ${r.claimsTakenOver} of ${r.claims} taken over (${r.claimsTakenOverEarly} early; ${r.claimsRefused} claim writes refused), locks ${r.locksTakenOver} (${r.locksTakenOverEarly} early; ${r.lockWritesRefused} lock writes refused); claim and lock writes stamped ${r.stamps.ahead} ahead, ${r.stamps.behind} behind, ${r.stamps.onTime} on time`,
  );
  return [
    `Fault matrix, ${new Date().toISOString().slice(0, 10)}, ${machineSummary()}, run ${run}`,
    `${args.nodes} virtual nodes, mock provider, a pod every ${CREATE_EVERY_MS / 1000} s deleted after ${POD_LIFETIME_MS / 1000} s, ${args.cadence} cadence`,
    '',
    markdownTable(
      [
        'fault',
        'fault s',
        'NotReady node-s',
        'pods lost',
        'created twice',
        'converged after s',
        'dead letters',
        'pods touched',
      ],
      rows,
    ),
    ...(lost.length > 0 ? ['', 'Not converged:', ...lost] : []),
    ...(errors.length > 0 ? ['', 'Injecting failed:', ...errors] : []),
    '',
    'Taken from a holder that had not let go, from the fault until convergence (early: before the claim period or lock TTL, true clock):',
    ...takeovers,
    '',
    `Invocations (function outcome count): ${invocations}`,
    '',
  ].join('\n');
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
