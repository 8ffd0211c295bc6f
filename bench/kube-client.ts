/**
 * The Kubernetes client decision (issue 29): our HTTP layer (lib/kube:
 * keep-alive agents, per-attempt timeouts, retries, client-node's KubeConfig
 * for auth) against client-node's typed APIs, 1.4 (this project's version)
 * and 2.x (its current major, whose undici agent is shared by all requests),
 * doing the same work against a real kube-apiserver.
 *
 * Usage: npx tsx bench/kube-client.ts [--runs 5] [--rounds 50] [--burst 400] [--concurrency 20]
 *   [--clients ours,client-node-1.4,client-node-2]
 *
 * Each client is bundled as the functions are (esbuild, ESM, minified, code
 * splitting) with the same workload (bench/kube-client/workload.ts) and run
 * in fresh `node` processes, the clients' runs interleaved. Each run: import
 * the client (a chunk loaded with import(), as a function loads it), build
 * it from a kubeconfig and send the first request (GET lease); then `rounds`
 * rounds of the heartbeat and status mix (GET lease, PATCH node status, GET
 * node, LIST pods by node, GET pod, PUT pod status); then a burst of pod
 * reads, `concurrency` at a time. Per phase: CPU of the process
 * (process.cpuUsage), wall time, calls and failures, RSS, and the TCP
 * connections it opened, counted by a TCP proxy on loopback in front of
 * kube-apiserver (TLS passes through it; the serving certificate names
 * 127.0.0.1). client-node 2.x is installed by this script into
 * ~/.cache/serverless-virtual-kubelet/bench-client-node-<version> (npm).
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { homedir, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, type Plugin } from 'esbuild';
import yaml from 'js-yaml';
import { createToolingClients } from '../lib/kube/tooling-clients.ts';
import { startControlPlane } from '../lib/local/control-plane.ts';
import type { PhaseReport } from './kube-client/workload.ts';
import { benchLog, distribution, fixed, machineSummary, markdownTable } from './support.ts';

const CLIENT_NODE_2 = '2.0.1';
const CLIENTS = ['ours', 'client-node-1.4', 'client-node-2'] as const;
type ClientName = (typeof CLIENTS)[number];

const log = benchLog('kube-client');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '50' },
    burst: { type: 'string', default: '400' },
    concurrency: { type: 'string', default: '20' },
    pods: { type: 'string', default: '20' },
    clients: { type: 'string', default: CLIENTS.join(',') },
  },
});
const runs = positive('runs');
const rounds = positive('rounds');
const burst = positive('burst');
const concurrency = positive('concurrency');
const podCount = positive('pods');
const clients = (values.clients ?? '').split(',').map((name) => {
  if (!(CLIENTS as readonly string[]).includes(name))
    throw new Error(`--clients: unknown client ${name} (${CLIENTS.join(', ')})`);
  return name as ClientName;
});

function positive(name: 'runs' | 'rounds' | 'burst' | 'concurrency' | 'pods'): number {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive integer, not ${values[name]}`);
  return n;
}

/** client-node 2.x in the bench's cache directory, installed with npm when missing. */
function ensureClientNode2(): string {
  const dir = join(homedir(), '.cache', 'serverless-virtual-kubelet', `bench-client-node-${CLIENT_NODE_2}`);
  const pkg = join(dir, 'node_modules', '@kubernetes', 'client-node', 'package.json');
  if (!existsSync(pkg) || JSON.parse(readFileSync(pkg, 'utf8')).version !== CLIENT_NODE_2) {
    mkdirSync(dir, { recursive: true });
    log(`installing @kubernetes/client-node@${CLIENT_NODE_2} into ${dir}`);
    execFileSync(
      'npm',
      [
        'install',
        '--no-save',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--prefix',
        dir,
        `@kubernetes/client-node@${CLIENT_NODE_2}`,
      ],
      { stdio: 'inherit' },
    );
  }
  return dir;
}

/** Bundles the workload with `client`'s adapter, as serverless.yml bundles a function; returns the entry and the bundle's size. */
async function bundle(
  client: ClientName,
  outdir: string,
  clientNode2Dir: string,
): Promise<{ entry: string; bytes: number }> {
  const here = resolve(import.meta.dirname, 'kube-client');
  const adapter = join(here, client === 'ours' ? 'ours.ts' : 'client-node.ts');
  const plugin: Plugin = {
    name: 'bench-adapter',
    setup(b) {
      b.onResolve({ filter: /^svk-bench-adapter$/ }, () => ({ path: adapter }));
      if (client !== 'client-node-2') return;
      b.onResolve({ filter: /^@kubernetes\/client-node$/ }, async (args) => {
        if (args.importer !== adapter) return undefined;
        const found = await b.resolve('@kubernetes/client-node', {
          resolveDir: clientNode2Dir,
          kind: args.kind,
        });
        return found.errors.length ? { errors: found.errors } : { path: found.path };
      });
    },
  };
  await build({
    entryPoints: [join(here, 'workload.ts')],
    outdir,
    bundle: true,
    minify: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    mainFields: ['module', 'main'],
    outExtension: { '.js': '.mjs' },
    logLevel: 'error',
    plugins: [plugin],
    banner: {
      js: "import { createRequire as __r } from 'node:module'; import { fileURLToPath as __f } from 'node:url'; const require = __r(import.meta.url); const __filename = __f(import.meta.url); const __dirname = __f(new URL('.', import.meta.url));",
    },
  });
  const bytes = readdirSync(outdir).reduce((sum, file) => sum + statSync(join(outdir, file)).size, 0);
  return { entry: join(outdir, 'workload.mjs'), bytes };
}

/** A TCP proxy on loopback to `target`, counting the connections it accepted. */
async function countingProxy(target: URL): Promise<{ server: Server; port: number; connections(): number }> {
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    socket.pipe(upstream).pipe(socket);
    const close = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', close);
    upstream.on('error', close);
    socket.on('close', close);
    upstream.on('close', close);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return { server, port: address.port, connections: () => accepted };
}

interface RunResult {
  client: ClientName;
  phases: (PhaseReport & { connections: number })[];
}

/** One fresh process of `entry`; each phase's report with the connections the proxy accepted during it. */
function runOnce(
  client: ClientName,
  entry: string,
  settings: object,
  connections: () => number,
): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, SVK_BENCH_SETTINGS: JSON.stringify(settings) };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [entry], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const phases: RunResult['phases'] = [];
  let mark = connections();
  return new Promise((done, fail) => {
    child.on('message', (report: PhaseReport) => {
      const now = connections();
      phases.push({ ...report, connections: now - mark });
      mark = now;
      child.send('go');
    });
    child.on('error', fail);
    child.on('exit', (code) => {
      if (code === 0) done({ client, phases });
      else fail(new Error(`${client} workload exited with ${code}`));
    });
  });
}

const work = mkdtempSync(join(tmpdir(), 'svk-bench-kube-client-'));
const clientNode2Dir = clients.includes('client-node-2') ? ensureClientNode2() : '';
const bundles = new Map<ClientName, { entry: string; bytes: number }>();
for (const client of clients) bundles.set(client, await bundle(client, join(work, client), clientNode2Dir));
log(`bundled: ${[...bundles].map(([c, b]) => `${c} ${(b.bytes / 1024).toFixed(0)} KiB`).join(', ')}`);

const controlPlane = await startControlPlane({ dir: join(work, 'control-plane'), log });
let proxy: Awaited<ReturnType<typeof countingProxy>> | undefined;
const loads: number[] = [];
const results: RunResult[] = [];
try {
  const admin = createToolingClients(controlPlane.adminKubeconfig);
  const namespace = 'bench-kube-client';
  const node = 'bench-kube-client-node';
  await admin.core.createNamespace({ body: { metadata: { name: namespace } } });
  await admin.core.createNode({ body: { metadata: { name: node } } });
  await admin.coordination.createNamespacedLease({
    namespace: 'kube-node-lease',
    body: { metadata: { name: node }, spec: { holderIdentity: node, leaseDurationSeconds: 40 } },
  });
  const pods = Array.from({ length: podCount }, (_, i) => `bench-${i}`);
  // Bound by name to a node no kubelet runs: Pending, and tolerating the node's taints for ever (never evicted).
  const tolerate = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map((key) => ({
    key,
    operator: 'Exists',
    effect: 'NoExecute',
  }));
  for (const name of pods) {
    await admin.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, labels: { app: 'bench' } },
        spec: {
          nodeName: node,
          tolerations: tolerate,
          containers: [{ name: 'c', image: 'registry.invalid/bench:1' }],
        },
      },
    });
  }

  proxy = await countingProxy(new URL(controlPlane.server));
  const kubeconfig = yaml.load(readFileSync(controlPlane.adminKubeconfig, 'utf8')) as {
    clusters: { cluster: { server: string } }[];
  };
  for (const entry of kubeconfig.clusters) entry.cluster.server = `https://127.0.0.1:${proxy.port}`;
  const proxied = join(work, 'proxied.kubeconfig');
  writeFileSync(proxied, yaml.dump(kubeconfig));
  const settings = { kubeconfig: proxied, namespace, node, lease: node, pods, rounds, burst, concurrency };

  for (let run = 1; run <= runs; run++) {
    for (const client of clients) {
      const result = await runOnce(client, bundles.get(client)?.entry ?? '', settings, proxy.connections);
      results.push(result);
      loads.push(loadavg()[0] ?? 0);
      const failed = result.phases.find((p) => p.failures > 0);
      log(
        `run ${run} ${client}: ${result.phases.map((p) => `${p.phase} ${fixed(p.wallMs, 0)} ms`).join(', ')}`,
      );
      if (failed)
        throw new Error(
          `${client}: ${failed.failures} of ${failed.calls} calls failed in ${failed.phase}: ${failed.firstError}`,
        );
    }
  }
} finally {
  proxy?.server.close();
  await controlPlane.stop();
  rmSync(work, { recursive: true, force: true });
}

/** The median of `pick` over a client's runs, for the phase at `index`. */
function median(client: ClientName, index: number, pick: (p: RunResult['phases'][number]) => number): number {
  return distribution(
    results
      .filter((r) => r.client === client)
      .map((r) => pick(r.phases[index] as RunResult['phases'][number])),
  ).p50;
}

const mixCalls = rounds * 6;
const rows = clients.map((client) => [
  client,
  fixed((bundles.get(client)?.bytes ?? 0) / 1024, 0),
  `${fixed(median(client, 0, (p) => p.cpuMs))} / ${fixed(median(client, 0, (p) => p.wallMs))}`,
  `${fixed(median(client, 1, (p) => p.cpuMs))} / ${fixed(median(client, 1, (p) => p.wallMs))}`,
  `${fixed((median(client, 2, (p) => p.cpuMs) * 1000) / mixCalls, 0)} / ${fixed(median(client, 2, (p) => p.wallMs) / mixCalls, 2)}`,
  fixed(median(client, 1, (p) => p.connections) + median(client, 2, (p) => p.connections), 0),
  `${fixed((median(client, 3, (p) => p.cpuMs) * 1000) / burst, 0)} / ${fixed(
    median(client, 3, (p) => p.wallMs),
    0,
  )}`,
  fixed(
    median(client, 3, (p) => p.connections),
    0,
  ),
  fixed(
    median(client, 3, (p) => p.rssMb),
    0,
  ),
]);
const load = distribution(loads);
process.stdout.write(
  `${markdownTable(
    [
      'client',
      'bundle KiB',
      'import: CPU / wall ms',
      'build + first request: CPU / wall ms',
      `mix (${mixCalls} calls, one at a time): CPU µs / wall ms per call`,
      'connections (first request + mix)',
      `burst (${burst} GETs, ${concurrency} at a time): CPU µs per call / wall ms`,
      'burst connections',
      'RSS after, MB',
    ],
    rows,
  )}\n\nMedians of ${runs} fresh processes per client, interleaved. ${machineSummary()}, load average ${fixed(load.min, 1)}-${fixed(load.max, 1)}, ${new Date().toISOString().slice(0, 10)}.\n`,
);
