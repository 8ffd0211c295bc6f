/**
 * The kubelet API under load, beside the heartbeat: one virtual node (the
 * mock provider) served by the whole deployment and the loopback kubelet
 * API front (lib/local/local-kubelet-api.ts), the real kube-apiserver in
 * between, and for `--seconds` (60) both `--followers` (50) concurrent
 * `kubectl logs -f` of a pod that prints a line a second and `--rate` (200)
 * log requests a second through the API server
 * (`GET /api/v1/namespaces/<ns>/pods/<pod>/log?tailLines=10`).
 *
 *   npx tsx bench/kubelet-api-load.ts [--followers 50] [--rate 200] [--seconds 60]
 *
 * Measured: the node's lease renewals (gaps between consecutive renewTimes,
 * read every second) in a quiet window before the load and during it, Ready
 * sampled every second, the log requests' answers and latencies, and how
 * many followers still stream at the end. The report goes to stdout,
 * progress to stderr; record it in docs/benchmarks.md with the machine, the
 * date and the load.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { Agent, type RequestOptions, request } from 'node:https';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { createToolingClients } from '../lib/kube/tooling-clients.ts';
import { CertificateAuthority } from '../lib/local/control-plane/pki.ts';
import { LocalDeployment } from '../lib/local/local-deployment.ts';
import { startLocalKubeletApi } from '../lib/local/local-kubelet-api.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';
import { KUBECTL } from '../test/support/kubelet-api.ts';
import {
  benchLog,
  distribution,
  fixed,
  machineSummary,
  markdownTable,
  startBenchEnvironment,
} from './support.ts';

const log = benchLog('kubelet-api-load');
const root = new URL('..', import.meta.url).pathname;

function option(argv: string[], flag: string, fallback: number): number {
  const at = argv.indexOf(flag);
  if (at < 0) return fallback;
  const n = Number(argv[at + 1]);
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`${flag} must be a positive number, got ${argv[at + 1]}`);
  return n;
}

/** Lease renewTimes and Ready, read every second until stopped. */
function sampleNode(admin: ReturnType<typeof createToolingClients>, node: string) {
  const renewals: number[] = [];
  const ready: { at: number; status: string | undefined }[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = Date.now();
      try {
        const lease = await admin.coordination.readNamespacedLease({
          namespace: 'kube-node-lease',
          name: node,
        });
        const renewed = new Date(lease.spec?.renewTime ?? 0).getTime();
        if (renewed > (renewals.at(-1) ?? 0)) renewals.push(renewed);
        const n = await admin.core.readNode({ name: node });
        ready.push({ at, status: n.status?.conditions?.find((c) => c.type === 'Ready')?.status });
      } catch {
        ready.push({ at, status: undefined });
      }
      await delay(Math.max(0, 1_000 - (Date.now() - at)));
    }
  })();
  return {
    renewals,
    ready,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** Gaps (s) between consecutive renewals within [from, to]. */
function gaps(renewals: readonly number[], from: number, to: number): number[] {
  const inside = renewals.filter((r) => r >= from && r <= to);
  return inside.slice(1).map((r, i) => (r - (inside[i] ?? r)) / 1000);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const followers = option(argv, '--followers', 50);
  const rate = option(argv, '--rate', 200);
  const seconds = option(argv, '--seconds', 60);
  const loadBefore = loadavg();
  const dir = join(root, '.local', `bench-kubelet-api-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const env = await startBenchEnvironment({ dir: join(dir, 'control-plane'), log });
  const children: ChildProcess[] = [];
  let deployment: LocalDeployment | undefined;
  let api: Awaited<ReturnType<typeof startLocalKubeletApi>> | undefined;
  try {
    const tableName = 'svk-kubelet-api-load';
    const { client } = createDynamoDbClient({ endpoint: env.dynamo.endpoint, region: 'local' });
    await createTable(client, tableName);
    const node = 'load-node';
    const functions: Record<string, string | undefined> = {
      SVK_KUBECONFIG: env.controlPlane.kubeletKubeconfig,
      SVK_DYNAMODB_ENDPOINT: env.dynamo.endpoint,
      AWS_REGION: 'local',
      SVK_TABLE_NAME: tableName,
      SVK_LOG_LEVEL: 'warn',
      SVK_NODE_NAMES: node,
      SVK_NODE_TAINTS: '',
    };
    const ca = CertificateAuthority.open(dirname(env.controlPlane.ca.cert));
    api = await startLocalKubeletApi({
      env: functions,
      // The kubelet API's own identity (infra/rbac.yaml), as deployed.
      kubeconfig: env.controlPlane.kubeletApiKubeconfig,
      nodes: [node],
      ca,
      dir: join(dir, 'kubelet-api'),
    });
    deployment = new LocalDeployment({ env: functions });
    deployment.start();
    const admin = createToolingClients(env.controlPlane.adminKubeconfig, { requestTimeoutMs: 30_000 });
    const ns = 'load';
    await admin.core.createNamespace({ body: { metadata: { name: ns } } });
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'ticker' },
        spec: {
          nodeName: node,
          // The namespace is new: its service account may have no token yet.
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sh', '-c', 'while true; do echo tick; sleep 1; done'],
            },
          ],
        },
      },
    });
    for (const started = Date.now(); ; await delay(1_000)) {
      const pod = await admin.core
        .readNamespacedPod({ namespace: ns, name: 'ticker' })
        .catch(() => undefined);
      if (pod?.status?.phase === 'Running') break;
      if (Date.now() - started > 180_000) throw new Error('the pod is not Running after 3 min');
    }
    log('pod Running; a quiet window first');
    const sampler = sampleNode(admin, node);
    const quietFrom = Date.now();
    await delay(seconds * 1_000);
    const loadFrom = Date.now();

    log(`${followers} kubectl logs -f, ${rate} log requests a second, for ${seconds} s`);
    const received = new Array<number>(followers).fill(0);
    const lines = () => received.slice();
    for (let i = 0; i < followers; i++) {
      const child = spawn(
        KUBECTL,
        ['--kubeconfig', env.controlPlane.adminKubeconfig, 'logs', '-f', '-n', ns, 'ticker'],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      child.stdout?.on('data', (d: Buffer) => {
        received[i] = (received[i] ?? 0) + d.toString('utf8').split('\n').length - 1;
      });
      children.push(child);
    }

    const kc = new KubeConfig();
    kc.loadFromFile(env.controlPlane.adminKubeconfig);
    const options: RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const server = new URL(env.controlPlane.server);
    const latencies: number[] = [];
    const answers = new Map<string, number>();
    let inFlight = 0;
    let skipped = 0;
    const get = () =>
      new Promise<void>((resolve) => {
        const at = performance.now();
        inFlight++;
        const done = (key: string) => {
          inFlight--;
          answers.set(key, (answers.get(key) ?? 0) + 1);
          if (key === '200') latencies.push(performance.now() - at);
          resolve();
        };
        const req = request(
          {
            ...options,
            agent,
            host: server.hostname,
            port: server.port,
            path: `/api/v1/namespaces/${ns}/pods/ticker/log?tailLines=10`,
            timeout: 30_000,
          },
          (res) => {
            res.resume();
            res.on('end', () => done(String(res.statusCode)));
            res.on('error', () => done('error'));
          },
        );
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', (err) => done(err.message === 'timeout' ? 'timeout' : 'error'));
        req.end();
      });
    const pending: Promise<void>[] = [];
    const perTick = rate / 20;
    for (let tick = 0; tick < seconds * 20; tick++) {
      const at = Date.now();
      for (let i = 0; i < perTick; i++) {
        // Bounded: a client that cannot keep up counts what it skipped rather than piling up.
        if (inFlight >= 400) skipped++;
        else pending.push(get());
      }
      await delay(Math.max(0, 50 - (Date.now() - at)));
    }
    const linesBeforeEnd = lines();
    await delay(3_000);
    const linesAtEnd = lines();
    const loadTo = Date.now();
    await Promise.all(pending);
    await sampler.stop();
    const streaming = linesAtEnd.filter((n, i) => n > (linesBeforeEnd[i] ?? 0)).length;
    const exited = children.filter((c) => c.exitCode !== null).length;

    const quiet = distribution(gaps(sampler.renewals, quietFrom, loadFrom));
    const loaded = distribution(gaps(sampler.renewals, loadFrom, loadTo));
    const notReady = (from: number, to: number) =>
      sampler.ready.filter((s) => s.at >= from && s.at <= to && s.status !== 'True').length;
    const lat = distribution(latencies);
    const load = (l: number[]) => l.map((n) => n.toFixed(2)).join(' ');
    const row = (name: string, g: typeof quiet, from: number, to: number) => [
      name,
      fixed((to - from) / 1000, 0),
      String(g.count),
      `${fixed(g.p50)} / ${fixed(g.p99)} / ${fixed(g.max)}`,
      String(notReady(from, to)),
    ];
    process.stdout.write(
      [
        `Kubelet API load, ${new Date().toISOString().slice(0, 16)} UTC, ${machineSummary()}; load average (1/5/15 min) ${load(loadBefore)} at the start, ${load(loadavg())} at the end`,
        '',
        markdownTable(
          ['window', 's', 'lease gaps', 'gap p50 / p99 / max (s)', 'samples not Ready'],
          [row('quiet', quiet, quietFrom, loadFrom), row('under load', loaded, loadFrom, loadTo)],
        ),
        '',
        markdownTable(
          [
            'log requests sent',
            'answers',
            'skipped (400 in flight)',
            'latency p50 / p99 / max (ms)',
            'followers streaming at the end',
            'followers exited',
            'lines per follower min / max',
          ],
          [
            [
              String(pending.length),
              [...answers].map(([k, n]) => `${k}: ${n}`).join(', '),
              String(skipped),
              `${fixed(lat.p50, 0)} / ${fixed(lat.p99, 0)} / ${fixed(lat.max, 0)}`,
              `${streaming} of ${followers}`,
              String(exited),
              `${Math.min(...linesAtEnd)} / ${Math.max(...linesAtEnd)}`,
            ],
          ],
        ),
        '',
      ].join('\n'),
    );
    // Figures of a kubelet API that refused the load are no figures: say so and fail.
    const refused = [...answers].filter(([k]) => k !== '200');
    if (refused.length > 0 || streaming < followers)
      throw new Error(
        `the kubelet API did not serve the load: answers ${[...answers].map(([k, n]) => `${k}: ${n}`).join(', ')}, ${streaming} of ${followers} followers streaming`,
      );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await deployment?.stop({ abortRunning: true });
    await api?.stop();
    await env.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
