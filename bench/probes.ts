/**
 * Probing benchmark: what probes add to the cost of a deployment, and how
 * long a readiness change takes to reach the API server.
 *
 * Usage: npx tsx bench/probes.ts [--provider docker|mock] [--pods 100] [--minutes 5]
 *          [--period 10] [--flips 10] [--write-figures docs/figures-probes-<provider>.json]
 *
 * One deployment at production cadence (the tick, serverless.yml's
 * schedules and timeouts) serves one virtual node, first with `--pods` pods
 * without probes, then with as many pods each with a readiness probe and a
 * liveness probe every `--period` seconds (the kubelet's default is 10):
 * docker: httpGet readiness and tcpSocket liveness on busybox httpd, on the
 * run's Podman, probed by the node's prober; mock: exec probes, simulated.
 * After all pods are Ready and a minute of warm-up, each phase is measured
 * for `--minutes`: the tick invocations (wall time, and this process's CPU
 * time while each ran; billed as bench/idle-cost.ts bills them: the CPU
 * part stretched to 256 MB's share of a vCPU), the HTTP requests the
 * functions sent (Kubernetes, DynamoDB, the engine). The difference of the
 * two phases, priced at lib/cost/prices.ts, is the cost of probing them;
 * scaled to 1,000 probed pods, it is what the issue bounds at $1 a month.
 *
 * Then `--flips` pods' readiness changes (docker: the file httpd serves is
 * removed through the engine's exec, then written again; mock: the pods
 * were created with a readiness that fails after a known time) and the time
 * until the API server's pod shows it is measured against two periods plus
 * one tick.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { MEMORY_PER_VCPU_MB, MINUTES_PER_MONTH, PRICES } from '../lib/cost/prices.ts';
import { createToolingClients, type ToolingClients } from '../lib/kube/tooling-clients.ts';
import { currentInvocation } from '../lib/local/invocation-scope.ts';
import type { Invocation, InvocationResult } from '../lib/local/lambda-runtime.ts';
import { LocalDeployment } from '../lib/local/local-deployment.ts';
import { type PodmanService, startPodman } from '../lib/local/podman.ts';
import { LABELS } from '../lib/provider/docker/names.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import {
  type BenchEnvironment,
  benchLog,
  distribution,
  fixed,
  HttpRequestCounter,
  headerValue,
  interruptSignal,
  machineSummary,
  resumingWatch,
  startBenchEnvironment,
} from './support.ts';

const log = benchLog('bench probes');
const root = new URL('..', import.meta.url).pathname;
const TICK_MEMORY_MB = 256;
const TICK_MS = 10_000;
const WARMUP_MS = 60_000;
const IMAGE = 'busybox:1.36';
const MOCK = 'mock.serverless-virtual-kubelet.io/';

interface Options {
  provider: 'docker' | 'mock';
  pods: number;
  minutes: number;
  period: number;
  flips: number;
  writeFigures?: string;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      provider: { type: 'string', default: 'docker' },
      pods: { type: 'string', default: '100' },
      minutes: { type: 'string', default: '5' },
      period: { type: 'string', default: '10' },
      flips: { type: 'string', default: '10' },
      'write-figures': { type: 'string' },
    },
  });
  const provider = values.provider;
  if (provider !== 'docker' && provider !== 'mock')
    throw new Error(`--provider: docker or mock, not ${provider}`);
  const whole = (name: string, text: string, min: number) => {
    const n = Number(text);
    if (!(Number.isInteger(n) && n >= min))
      throw new Error(`--${name}: a whole number >= ${min}, not ${text}`);
    return n;
  };
  return {
    provider,
    pods: whole('pods', values.pods, 1),
    minutes: whole('minutes', values.minutes, 1),
    period: whole('period', values.period, 1),
    flips: whole('flips', values.flips, 0),
    ...(values['write-figures'] ? { writeFigures: values['write-figures'] } : {}),
  };
}

/** Per minute of a measured window. */
interface PhaseRates {
  ticks: number;
  /** Mean wall and CPU ms of a tick. */
  tickWallMs: number;
  tickCpuMs: number;
  gbSeconds: number;
  /** Mean time of each tick part (ms), over the ticks that ran it: probing adds to pod-status's. */
  partMs: Record<string, number>;
  /** HTTP requests the functions sent, by kind (`kube`, `dynamodb`, `engine`). */
  requests: Record<string, number>;
  /** Pods that turned unready during the window (a probe that timed out on a loaded host). */
  flaps?: number;
  /** The node's prober container on the engine host (docker): its memory at the end, its CPU over the window (% of a core). */
  prober?: { memoryMiB: number; cpuPercent: number };
}

/** The prober container's memory and cumulative CPU, from the engine's one-shot stats. */
async function proberUsage(
  docker: Docker,
  node: string,
): Promise<{ memoryBytes: number; cpuNs: number; at: number } | undefined> {
  try {
    const stats = (await docker.getContainer(`svk_prober_${node}`).stats({ stream: false })) as {
      memory_stats?: { usage?: number };
      cpu_stats?: { cpu_usage?: { total_usage?: number } };
    };
    return {
      memoryBytes: stats.memory_stats?.usage ?? 0,
      cpuNs: stats.cpu_stats?.cpu_usage?.total_usage ?? 0,
      at: Date.now(),
    };
  } catch {
    return undefined;
  }
}

interface TickRecord {
  start: number;
  cpu: NodeJS.CpuUsage;
  wallMs?: number;
  cpuMs?: number;
  /** The tick's time per part (TickRunResult.partMs). */
  partMs?: Record<string, number>;
}

/** Where each request goes, by what it looks like (the functions' requests only). */
function requestKind(request: ClientRequest): string | undefined {
  const fn = currentInvocation()?.functionName;
  if (!fn) return undefined;
  if (headerValue(request, 'x-amz-target')?.startsWith('DynamoDB')) return `${fn}:dynamodb`;
  if (/^\/apis?\//.test(request.path)) return `${fn}:kube`;
  return `${fn}:engine`;
}

function billedMs(wallMs: number, cpuMs: number): number {
  const cpu = Math.min(cpuMs, wallMs);
  return wallMs - cpu + cpu * Math.max(1, MEMORY_PER_VCPU_MB / TICK_MEMORY_MB);
}

/** Dollars a month of a per-minute usage: Lambda duration and requests, DynamoDB counted as requests. */
function monthly(r: PhaseRates): number {
  const lambda = r.gbSeconds * PRICES.lambdaGbSecond + r.ticks * PRICES.lambdaRequest;
  const dynamo = Object.entries(r.requests)
    .filter(([k]) => k.endsWith(':dynamodb'))
    .reduce((sum, [, n]) => sum + n * PRICES.dynamoWriteUnit, 0);
  return (lambda + dynamo) * MINUTES_PER_MONTH;
}

class Meter {
  readonly ticks: TickRecord[] = [];
  readonly #byRequest = new Map<string, TickRecord>();
  readonly requests = new HttpRequestCounter(requestKind);

  attach(deployment: LocalDeployment): void {
    const runtime = deployment.runtime;
    const invoke = runtime.invoke.bind(runtime);
    runtime.invoke = (name, event, options = {}) => {
      const inv = invoke(name, event, options);
      if (name === 'tick') {
        const r: TickRecord = { start: performance.now(), cpu: process.cpuUsage() };
        this.#byRequest.set(inv.requestId, r);
        this.ticks.push(r);
      }
      return inv;
    };
  }

  onResult(invocation: Invocation, result: InvocationResult): void {
    const r = this.#byRequest.get(invocation.requestId);
    if (!r) return;
    if (result.status === 'ok') {
      const partMs = (result.result as { partMs?: Record<string, number> } | undefined)?.partMs;
      if (partMs) r.partMs = partMs;
    }
    this.#byRequest.delete(invocation.requestId);
    r.wallMs = performance.now() - r.start;
    const cpu = process.cpuUsage(r.cpu);
    r.cpuMs = (cpu.user + cpu.system) / 1000;
  }

  /** The rates of a window that runs `ms` from now. */
  async window(ms: number, signal: AbortSignal): Promise<PhaseRates> {
    const from = performance.now();
    const before = this.requests.snapshot();
    await delay(ms, undefined, { signal });
    const minutes = (performance.now() - from) / 60_000;
    const done = this.ticks.filter((t) => t.start >= from && t.wallMs !== undefined);
    const wall = done.reduce((s, t) => s + (t.wallMs ?? 0), 0);
    const cpu = done.reduce((s, t) => s + (t.cpuMs ?? 0), 0);
    const billed = done.reduce((s, t) => s + billedMs(t.wallMs ?? 0, t.cpuMs ?? 0), 0);
    const requests: Record<string, number> = {};
    for (const [k, v] of this.requests.snapshot()) {
      const d = v - (before.get(k) ?? 0);
      if (d > 0) requests[k] = d / minutes;
    }
    const parts = new Map<string, number[]>();
    for (const t of done)
      for (const [part, ms] of Object.entries(t.partMs ?? {}))
        parts.set(part, [...(parts.get(part) ?? []), ms]);
    const partMs = Object.fromEntries(
      [...parts].map(([p, xs]) => [p, xs.reduce((a, b) => a + b, 0) / xs.length]),
    );
    return {
      ticks: done.length / minutes,
      partMs,
      tickWallMs: wall / Math.max(1, done.length),
      tickCpuMs: cpu / Math.max(1, done.length),
      gbSeconds: ((billed / 1000) * (TICK_MEMORY_MB / 1024)) / minutes,
      requests,
    };
  }
}

function podBody(name: string, node: string, options: Options, probed: boolean, index: number): V1Pod {
  const period = options.period;
  const web = 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www';
  const container =
    options.provider === 'docker'
      ? {
          name: 'main',
          image: IMAGE,
          command: ['sh', '-c', probed ? web : 'sleep 3600'],
          ...(probed
            ? {
                // One failure turns it unready: what is measured is how fast a result travels, not the threshold.
                readinessProbe: {
                  httpGet: { path: '/', port: 8080 },
                  periodSeconds: period,
                  timeoutSeconds: 3,
                  failureThreshold: 1,
                },
                livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: period, timeoutSeconds: 3 },
              }
            : {}),
        }
      : {
          name: 'main',
          image: IMAGE,
          command: ['sleep', '3600'],
          ...(probed
            ? {
                readinessProbe: {
                  exec: { command: ['test', '-e', '/tmp/ready'] },
                  periodSeconds: period,
                  failureThreshold: 1,
                },
                livenessProbe: { exec: { command: ['true'] }, periodSeconds: period },
              }
            : {}),
        };
  // Mock pods flip to unready at a known time: the first `flips` of them, spread over a minute.
  const flipAfter = WARMUP_MS / 1000 + options.minutes * 60 + 30 + index * 6;
  const annotations =
    options.provider === 'mock' && probed && index < options.flips
      ? { [`${MOCK}probe.main.readiness`]: `fail-after=${flipAfter}` }
      : undefined;
  return {
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [container],
    },
  };
}

interface PodSeen {
  ready: boolean;
  /** When this process saw each Ready change (epoch ms). */
  changes: Array<{ at: number; ready: boolean }>;
  startedAt?: number;
}

async function phase(
  ctx: { admin: ToolingClients; meter: Meter; node: string; options: Options; docker?: Docker },
  probed: boolean,
  signal: AbortSignal,
): Promise<{ rates: PhaseRates; latencies?: { unready: number[]; ready: number[] } }> {
  const { admin, meter, node, options } = ctx;
  const namespace = `probes-${probed ? 'on' : 'off'}-${randomBytes(3).toString('hex')}`;
  await admin.core.createNamespace({ body: { metadata: { name: namespace } } });
  const seen = new Map<string, PodSeen>();
  const watch = await resumingWatch(
    admin.config,
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (_type, object) => {
      const pod = object as V1Pod;
      const name = pod.metadata?.name ?? '';
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      const entry = seen.get(name) ?? { ready: false, changes: [] };
      if (entry.ready !== ready || entry.changes.length === 0) entry.changes.push({ at: Date.now(), ready });
      entry.ready = ready;
      const started = pod.status?.containerStatuses?.[0]?.state?.running?.startedAt;
      if (started) entry.startedAt = new Date(started).getTime();
      seen.set(name, entry);
    },
    log,
  );
  try {
    const names = Array.from({ length: options.pods }, (_, i) => `pod-${String(i).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(
        names
          .slice(i, i + 20)
          .map((name, j) =>
            admin.core.createNamespacedPod({ namespace, body: podBody(name, node, options, probed, i + j) }),
          ),
      );
    }
    // Each pod Ready once: a loaded host may time a probe out now and then, and a pod drop out for a period.
    const readyBy = Date.now() + 15 * 60_000;
    const everReady = () => [...seen.values()].filter((p) => p.changes.some((c) => c.ready)).length;
    while (everReady() < options.pods) {
      if (Date.now() > readyBy) {
        const never = names.filter((n) => !seen.get(n)?.changes.some((c) => c.ready));
        for (const name of never.slice(0, 5)) {
          const pod = await admin.core.readNamespacedPod({ namespace, name }).catch(() => undefined);
          log(`never Ready: ${name} ${JSON.stringify(pod?.status?.containerStatuses)}`);
        }
        throw new Error(`only ${everReady()} pods were ever Ready`);
      }
      await delay(1_000, undefined, { signal });
    }
    log(`${probed ? 'probed' : 'unprobed'}: ${options.pods} pods Ready; warming up`);
    await delay(WARMUP_MS, undefined, { signal });
    const windowStart = Date.now();
    const proberBefore = ctx.docker && probed ? await proberUsage(ctx.docker, node) : undefined;
    const rates = await meter.window(options.minutes * 60_000, signal);
    const proberAfter = ctx.docker && probed ? await proberUsage(ctx.docker, node) : undefined;
    if (proberBefore && proberAfter) {
      rates.prober = {
        memoryMiB: proberAfter.memoryBytes / 2 ** 20,
        cpuPercent:
          ((proberAfter.cpuNs - proberBefore.cpuNs) / 1e6 / (proberAfter.at - proberBefore.at)) * 100,
      };
    }
    rates.flaps = [...seen.values()].reduce(
      (n, p) => n + p.changes.filter((c) => !c.ready && c.at >= windowStart).length,
      0,
    );
    log(`${probed ? 'probed' : 'unprobed'}: ${JSON.stringify(rates)}`);
    if (!probed || options.flips === 0) return { rates };
    const latencies =
      options.provider === 'docker' && ctx.docker
        ? await dockerFlips(ctx.docker, namespace, names.slice(0, options.flips), seen, signal)
        : await mockFlips(names.slice(0, options.flips), seen, options, signal);
    return { rates, latencies };
  } finally {
    watch.stop();
    await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}

/** Removes the file httpd serves (unready), then writes it again (ready), timing each change's arrival. */
async function dockerFlips(
  docker: Docker,
  namespace: string,
  names: readonly string[],
  seen: Map<string, PodSeen>,
  signal: AbortSignal,
): Promise<{ unready: number[]; ready: number[] }> {
  const unready: number[] = [];
  const ready: number[] = [];
  for (const [command, want, into] of [
    ['rm -f /www/index.html', false, unready],
    ['echo ok > /www/index.html', true, ready],
  ] as const) {
    const flipped = new Map<string, number>();
    for (const name of names) {
      const [app] = await docker.listContainers({
        filters: {
          label: [`${LABELS.namespace}=${namespace}`, `${LABELS.name}=${name}`, `${LABELS.role}=app`],
        },
      });
      if (!app) continue;
      const exec = await docker.getContainer(app.Id).exec({ Cmd: ['sh', '-c', command], AttachStdout: true });
      const out = await exec.start({});
      out.resume();
      await new Promise((resolve) => out.on('end', resolve));
      flipped.set(name, Date.now());
    }
    const deadline = Date.now() + 120_000;
    for (const [name, at] of flipped) {
      for (;;) {
        const change = seen.get(name)?.changes.find((c) => c.ready === want && c.at >= at);
        if (change) {
          into.push((change.at - at) / 1000);
          break;
        }
        if (Date.now() > deadline) break;
        await delay(200, undefined, { signal });
      }
    }
  }
  return { unready, ready };
}

/** The mock pods' readiness fails at a known time after their start: its arrival in the API server. */
async function mockFlips(
  names: readonly string[],
  seen: Map<string, PodSeen>,
  options: Options,
  signal: AbortSignal,
): Promise<{ unready: number[]; ready: number[] }> {
  const unready: number[] = [];
  const deadline = Date.now() + 3 * 60_000;
  for (const [i, name] of names.entries()) {
    const flipAfter = WARMUP_MS / 1000 + options.minutes * 60 + 30 + i * 6;
    for (;;) {
      const s = seen.get(name);
      // The worker's first failing probe after the flip, and the failure threshold's 3 in a row.
      const change = s?.changes.find(
        (c) => !c.ready && s.startedAt !== undefined && c.at > s.startedAt + 1_000,
      );
      if (change && s?.startedAt !== undefined) {
        unready.push((change.at - (s.startedAt + flipAfter * 1000)) / 1000);
        break;
      }
      if (Date.now() > deadline) break;
      await delay(500, undefined, { signal });
    }
  }
  return { unready, ready: [] };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const signal = interruptSignal(log);
  const dir = `${root}.local/bench-probes`;
  mkdirSync(dir, { recursive: true });
  const env: BenchEnvironment = await startBenchEnvironment({ dir: `${dir}/control-plane`, log });
  let podman: PodmanService | undefined;
  try {
    if (options.provider === 'docker') podman = await startPodman({ dir: `${dir}/podman`, log });
    const admin = createToolingClients(env.controlPlane.adminKubeconfig);
    const tableName = `svk-probes-${Date.now().toString(36)}`;
    const { client } = createDynamoDbClient({ endpoint: env.dynamo.endpoint, region: 'local' });
    await createTable(client, tableName);
    const node = `bench-probes-${options.provider}`;
    const meter = new Meter();
    const deployment = new LocalDeployment({
      env: {
        SVK_KUBECONFIG: env.controlPlane.kubeletKubeconfig,
        SVK_DYNAMODB_ENDPOINT: env.dynamo.endpoint,
        AWS_REGION: 'local',
        SVK_TABLE_NAME: tableName,
        SVK_LOG_LEVEL: process.env.SVK_BENCH_LOG_LEVEL ?? 'warn',
        SVK_NODE_NAMES: node,
        SVK_NODE_CAPACITY: 'cpu=200,memory=800Gi,pods=2000',
        SVK_PROVIDER: options.provider,
        ...(podman ? { SVK_DOCKER_HOST: podman.dockerHost, SVK_DOCKER_NETWORK: podman.network } : {}),
      },
      onResult: (invocation, result) => meter.onResult(invocation, result),
    });
    meter.attach(deployment);
    deployment.start();
    try {
      const docker = podman ? new Docker({ socketPath: podman.socketPath }) : undefined;
      const ctx = { admin, meter, node, options, ...(docker ? { docker } : {}) };
      const off = await phase(ctx, false, signal);
      await delay(30_000, undefined, { signal });
      const on = await phase(ctx, true, signal);
      report(options, off.rates, on.rates, on.latencies);
    } finally {
      await deployment.stop({ abortRunning: true });
    }
  } finally {
    await podman?.stop();
    await env.stop();
  }
}

function report(
  options: Options,
  off: PhaseRates,
  on: PhaseRates,
  latencies: { unready: number[]; ready: number[] } | undefined,
): void {
  const added = monthly(on) - monthly(off);
  const per1000 = (added * 1000) / options.pods;
  const bound = 2 * options.period + TICK_MS / 1000;
  const lines = [
    `probes bench, ${options.provider}, ${options.pods} pods, period ${options.period} s, ${options.minutes} min per phase; ${machineSummary()}`,
    `ticks/min ${fixed(off.ticks)} -> ${fixed(on.ticks)}; tick wall ${fixed(off.tickWallMs)} -> ${fixed(on.tickWallMs)} ms; tick CPU ${fixed(off.tickCpuMs)} -> ${fixed(on.tickCpuMs)} ms`,
    `tick parts (mean ms) unprobed ${JSON.stringify(roundAll(off.partMs))}`,
    `tick parts (mean ms) probed   ${JSON.stringify(roundAll(on.partMs))}`,
    `requests/min unprobed ${JSON.stringify(roundAll(off.requests))}`,
    `requests/min probed   ${JSON.stringify(roundAll(on.requests))}`,
    `pods turned unready during the window: unprobed ${off.flaps ?? 0}, probed ${on.flaps ?? 0}`,
    ...(on.prober
      ? [`prober container: ${fixed(on.prober.memoryMiB)} MiB, ${fixed(on.prober.cpuPercent)} % of a core`]
      : []),
    `GB-s/min ${off.gbSeconds.toFixed(4)} -> ${on.gbSeconds.toFixed(4)}; $/month ${monthly(off).toFixed(3)} -> ${monthly(on).toFixed(3)}: +${added.toFixed(3)}, +${per1000.toFixed(3)} per 1,000 probed pods (bound: $1)`,
  ];
  if (latencies) {
    const describe = (xs: number[]) => {
      if (xs.length === 0) return 'none measured';
      const d = distribution(xs);
      return `p50 ${fixed(d.p50)} s, max ${fixed(d.max)} s (${xs.length})`;
    };
    lines.push(
      `readiness change to the API server: unready ${describe(latencies.unready)}; ready ${describe(latencies.ready)}; bound 2 periods + 1 tick = ${bound} s`,
    );
  }
  for (const line of lines) log(line);
  if (options.writeFigures) {
    mkdirSync(dirname(options.writeFigures), { recursive: true });
    writeFileSync(
      options.writeFigures,
      `${JSON.stringify({ options, off, on, addedPerMonth: added, per1000, latencies, machine: machineSummary(), at: new Date().toISOString() }, null, 2)}\n`,
    );
  }
}

function roundAll(record: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(record)) out[k] = Math.round(v * 10) / 10;
  return out;
}

main().then(
  () => process.exit(0),
  (err) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
