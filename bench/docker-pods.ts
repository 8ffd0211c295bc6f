/**
 * Real-container burst: N pods through the whole deployment (pod-watch →
 * local event bus → pod-sync → provider → pod-status → API server) on a real
 * local control plane, once per provider: `docker` (real busybox containers
 * under a local Podman service) and `mock` (for comparison), at production
 * cadence (schedules every 60 s, pod-sync's reserved concurrency 10).
 *
 * Usage: npx tsx bench/docker-pods.ts [--pods 100] [--providers mock,docker]
 *          [--cap-minutes 10] [--engine podman|dockerd]
 *
 * `--engine dockerd` runs the containers under Debian's Docker Engine
 * (lib/local/dockerd.ts, installed by scripts/ensure-docker-engine.sh)
 * instead of Podman.
 *
 * Measured from outside the code under test: bound = when our create call
 * returned (pods carry spec.nodeName, so the scheduler is not measured);
 * Running = when a watch on the namespace first saw phase Running; memory
 * per pod = the proportional set size (PSS, /proc/<pid>/smaps_rollup) of
 * every process of the pods' containers and their monitors (Podman's conmon,
 * Docker's containerd shim), divided by N, and apart the growth of the
 * engine's RSS (the Podman service; dockerd with its containerd); delete = from the
 * namespace delete until the engine (docker) or the API server (mock) has
 * none of its pods left.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { isNotFound } from '../lib/kube/client.ts';
import { createToolingClients, type ToolingClients } from '../lib/kube/tooling-clients.ts';
import { startDockerd } from '../lib/local/dockerd.ts';
import { LocalDeployment } from '../lib/local/local-deployment.ts';
import { startPodman } from '../lib/local/podman.ts';
import { LABELS } from '../lib/provider/docker/names.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import {
  type BenchEnvironment,
  benchLog,
  distribution,
  fixed,
  interruptSignal,
  machineSummary,
  markdownTable,
  resumingWatch,
  startBenchEnvironment,
} from './support.ts';

const RATE_MS = 60_000;
const TIMEOUT_MS = 130_000;
const CONCURRENCY = 32;
const IMAGE = 'busybox:1.36';
const root = new URL('..', import.meta.url).pathname;
const benchDir = join(root, '.local', 'bench-docker-pods');
const log = benchLog('bench docker-pods');

type EngineKind = 'podman' | 'dockerd';

interface Options {
  pods: number;
  providers: Array<'mock' | 'docker'>;
  capMs: number;
  engine: EngineKind;
}

/** What the bench needs of a local engine, Podman's service or dockerd. */
interface Engine {
  kind: EngineKind;
  socketPath: string;
  dockerHost: string;
  network: string;
  servicePid: number;
  stop(): Promise<void>;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      pods: { type: 'string', default: '100' },
      providers: { type: 'string', default: 'mock,docker' },
      'cap-minutes': { type: 'string', default: '10' },
      engine: { type: 'string', default: 'podman' },
    },
  });
  const engine = values.engine;
  if (engine !== 'podman' && engine !== 'dockerd')
    throw new Error(`--engine must be podman or dockerd, got ${values.engine}`);
  const pods = Number(values.pods);
  if (!Number.isInteger(pods) || pods < 1 || pods > 1000)
    throw new Error(`--pods must be 1-1000, got ${values.pods}`);
  const providers = values.providers.split(',').map((p) => p.trim());
  if (!providers.every((p): p is 'mock' | 'docker' => p === 'mock' || p === 'docker'))
    throw new Error(`--providers: "${values.providers}" is not a list of mock and docker`);
  const minutes = Number(values['cap-minutes']);
  if (!(minutes > 0)) throw new Error(`--cap-minutes must be positive, got ${values['cap-minutes']}`);
  return { pods, providers, capMs: minutes * 60_000, engine };
}

interface BurstFigures {
  provider: string;
  pods: number;
  running: number;
  /** Seconds from bound to Running. */
  latency: ReturnType<typeof distribution>;
  firstToLastS: number;
  memoryPerPodMiB?: number;
  serviceGrowthMiB?: number;
  deleteS?: number;
}

async function nodeReady(admin: ToolingClients, node: string): Promise<boolean> {
  try {
    const n = await admin.core.readNode({ name: node });
    return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

async function until(
  what: string,
  capMs: number,
  probe: () => Promise<boolean>,
  signal: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + capMs;
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    // A probe that fails (an engine busy removing what it lists) is asked again.
    if (await probe().catch(() => false)) return true;
    await delay(500);
  }
  log(`gave up waiting for ${what} after ${capMs / 1000} s`);
  return false;
}

async function createNamespace(admin: ToolingClients, name: string, signal: AbortSignal): Promise<void> {
  await admin.core.createNamespace({ body: { metadata: { name } } });
  await until(
    `the default service account of ${name}`,
    60_000,
    async () => {
      const sa = await admin.core
        .readNamespacedServiceAccount({ name: 'default', namespace: name })
        .catch(() => undefined);
      return (sa?.secrets?.length ?? 0) > 0;
    },
    signal,
  );
}

function podBody(name: string, node: string): V1Pod {
  return {
    metadata: { name },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }],
    },
  };
}

/** PSS in bytes of a process (what it costs the host, shared pages split among their users). */
function pssBytes(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kib = /^Pss:\s+(\d+) kB/m.exec(text)?.[1];
    return kib ? Number(kib) * 1024 : 0;
  } catch {
    return 0;
  }
}

function rssBytes(pid: number): number {
  try {
    const kib = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib ? Number(kib) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The engine's own RSS: the Podman service, or dockerd and the containerd it started. */
function engineRssBytes(engine: Engine): number {
  const containerd = [...parents()]
    .filter(([pid, parent]) => parent === engine.servicePid && commOf(pid) === 'containerd')
    .map(([pid]) => pid);
  return [engine.servicePid, ...containerd].reduce((sum, pid) => sum + rssBytes(pid), 0);
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Parent of every process, from /proc. */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      map.set(Number(entry), ppid);
    } catch {
      // Exited while we read.
    }
  }
  return map;
}

/** Host memory of the pods of a namespace: their containers' processes and each container's monitor (conmon, or containerd's shim). */
async function podsMemory(docker: Docker, namespace: string): Promise<number> {
  const containers = await docker.listContainers({
    filters: { label: [`${LABELS.namespace}=${namespace}`] },
  });
  const tops = await Promise.all(
    containers.map(async (c) => (await docker.getContainer(c.Id).inspect()).State.Pid),
  );
  const ppid = parents();
  const children = new Map<number, number[]>();
  for (const [pid, parent] of ppid) children.set(parent, [...(children.get(parent) ?? []), pid]);
  const counted = new Set<number>();
  const walk = (pid: number) => {
    if (counted.has(pid)) return;
    counted.add(pid);
    for (const child of children.get(pid) ?? []) walk(child);
  };
  for (const top of tops.filter((p) => p > 0)) {
    walk(top);
    const monitor = ppid.get(top);
    if (monitor) counted.add(monitor); // conmon, or the containerd shim
  }
  return [...counted].reduce((sum, pid) => sum + pssBytes(pid), 0);
}

async function runBurst(
  provider: 'mock' | 'docker',
  n: number,
  env: BenchEnvironment,
  engine: Engine,
  tableName: string,
  capMs: number,
  signal: AbortSignal,
): Promise<BurstFigures> {
  const admin = createToolingClients(env.controlPlane.adminKubeconfig);
  const node = `bench-${provider}`;
  const docker = new Docker({ socketPath: engine.socketPath });
  const deployment = new LocalDeployment({
    env: {
      SVK_KUBECONFIG: env.controlPlane.kubeletKubeconfig,
      SVK_DYNAMODB_ENDPOINT: env.dynamo.endpoint,
      AWS_REGION: 'local',
      SVK_TABLE_NAME: tableName,
      SVK_LOG_LEVEL: process.env.SVK_BENCH_LOG_LEVEL ?? 'warn',
      SVK_NODE_NAMES: node,
      SVK_NODE_CAPACITY: 'cpu=200,memory=800Gi,pods=2000',
      SVK_PROVIDER: provider,
      SVK_DOCKER_HOST: engine.dockerHost,
      SVK_DOCKER_NETWORK: engine.network,
    },
    rateMs: RATE_MS,
    timeoutMs: TIMEOUT_MS,
  });
  deployment.start();
  try {
    await until(`node ${node} Ready`, 120_000, () => nodeReady(admin, node), signal);
    const namespace = `bench-${provider}-${randomBytes(3).toString('hex')}`;
    await createNamespace(admin, namespace, signal);
    const bound = new Map<string, number>();
    const running = new Map<string, number>();
    const watch = await resumingWatch(
      admin.config,
      `/api/v1/namespaces/${namespace}/pods`,
      {},
      (_type, object) => {
        const pod = object as V1Pod;
        const name = pod.metadata?.name;
        if (name && pod.status?.phase === 'Running' && !running.has(name)) running.set(name, Date.now());
      },
      log,
    );
    const serviceBefore = engineRssBytes(engine);
    const names = Array.from({ length: n }, (_, i) => `pod-${String(i).padStart(4, '0')}`);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < names.length; i = next++) {
          const name = names[i] ?? '';
          await admin.core.createNamespacedPod({ namespace, body: podBody(name, node) });
          bound.set(name, Date.now());
        }
      }),
    );
    log(`${provider}: ${n} pods bound`);
    await until(`${n} pods Running`, capMs, async () => running.size >= n, signal);
    watch.stop();
    const latencies = names.flatMap((name) => {
      const b = bound.get(name);
      const r = running.get(name);
      return b !== undefined && r !== undefined ? [(r - b) / 1000] : [];
    });
    const firstBound = Math.min(...bound.values());
    const lastRunning = Math.max(...running.values());
    const figures: BurstFigures = {
      provider,
      pods: n,
      running: running.size,
      latency: distribution(latencies),
      firstToLastS: (lastRunning - firstBound) / 1000,
    };
    if (provider === 'docker') {
      figures.memoryPerPodMiB = (await podsMemory(docker, namespace)) / n / 2 ** 20;
      figures.serviceGrowthMiB = (engineRssBytes(engine) - serviceBefore) / 2 ** 20;
    }
    log(`${provider}: ${JSON.stringify(figures)}`);
    const deleted = Date.now();
    await admin.core.deleteNamespace({ name: namespace });
    const empty = await until(
      `the pods of ${namespace} gone`,
      capMs,
      async () =>
        provider === 'docker'
          ? (
              await docker.listContainers({
                all: true,
                filters: { label: [`${LABELS.namespace}=${namespace}`] },
              })
            ).length === 0
          : (await admin.core.listNamespacedPod({ namespace })).items.length === 0,
      signal,
    );
    if (empty) figures.deleteS = (Date.now() - deleted) / 1000;
    return figures;
  } finally {
    await deployment.stop({ abortRunning: true });
  }
}

async function startEngine(kind: EngineKind): Promise<Engine> {
  const dir = join(benchDir, kind);
  const service = await (kind === 'dockerd' ? startDockerd({ dir, log }) : startPodman({ dir, log }));
  return { kind, ...service };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const signal = interruptSignal(log);
  const [env, engine] = await Promise.all([
    startBenchEnvironment({ dir: join(benchDir, 'control-plane'), log }),
    startEngine(options.engine),
  ]);
  try {
    const tableName = 'svk-bench-docker';
    const { client } = createDynamoDbClient({ endpoint: env.dynamo.endpoint, region: 'local' });
    await createTable(client, tableName);
    const results: BurstFigures[] = [];
    for (const provider of options.providers) {
      results.push(await runBurst(provider, options.pods, env, engine, tableName, options.capMs, signal));
    }
    const mib = (v: number | undefined) => (v === undefined ? 'n/a' : fixed(v, 1));
    process.stdout.write(
      `\n${new Date().toISOString().slice(0, 10)}, ${machineSummary()}, engine ${engine.kind}\n\n${markdownTable(
        [
          'provider',
          'pods',
          'Running',
          'bound → Running p50 (s)',
          'p99 (s)',
          'max (s)',
          'first bound → last Running (s)',
          'host memory per pod (MiB)',
          `${engine.kind === 'podman' ? 'Podman service' : 'dockerd + containerd'} growth (MiB)`,
          'delete all (s)',
        ],
        results.map((r) => [
          r.provider,
          String(r.pods),
          String(r.running),
          fixed(r.latency.p50),
          fixed(r.latency.p99),
          fixed(r.latency.max),
          fixed(r.firstToLastS),
          mib(r.memoryPerPodMiB),
          mib(r.serviceGrowthMiB),
          r.deleteS === undefined ? 'n/a' : fixed(r.deleteS),
        ]),
      )}\n`,
    );
  } finally {
    await engine.stop();
    await env.stop();
  }
}

await main();
