/**
 * The client's side of bench/kube-client.ts: one Kubernetes client (the
 * adapter this bundle was built with) doing the same work as every other,
 * in a fresh process, phase by phase. After each phase it reports its CPU,
 * wall time and memory to the parent over IPC and waits for the parent's go
 * (which reads the proxy's connection count in between, so each phase's
 * connections are its own).
 */
import type { BenchClient } from './adapter.ts';

export interface PhaseReport {
  phase: string;
  calls: number;
  failures: number;
  cpuMs: number;
  wallMs: number;
  rssMb: number;
  firstError?: string;
}

interface Settings {
  kubeconfig: string;
  namespace: string;
  node: string;
  lease: string;
  pods: string[];
  rounds: number;
  burst: number;
  concurrency: number;
}

const settings = JSON.parse(process.env.SVK_BENCH_SETTINGS ?? '{}') as Settings;

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Runs `body`, reports the phase and waits for the parent's go. */
async function phase(name: string, body: (count: (p: Promise<unknown>) => Promise<void>) => Promise<void>) {
  let calls = 0;
  let failures = 0;
  let firstError: string | undefined;
  const count = async (p: Promise<unknown>) => {
    calls++;
    try {
      await p;
    } catch (err) {
      failures++;
      firstError ??= err instanceof Error ? err.message.slice(0, 200) : String(err);
    }
  };
  const cpu0 = cpuMs();
  const wall0 = performance.now();
  await body(count);
  const report: PhaseReport = {
    phase: name,
    calls,
    failures,
    cpuMs: cpuMs() - cpu0,
    wallMs: performance.now() - wall0,
    rssMb: process.memoryUsage().rss / 2 ** 20,
    ...(firstError ? { firstError } : {}),
  };
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send?.(report);
  });
}

let client: BenchClient | undefined;
let open: ((kubeconfig: string) => Promise<BenchClient>) | undefined;

await phase('import', async () => {
  // Resolved by bench/kube-client.ts's esbuild plugin to this build's adapter (virtual-modules.d.ts).
  ({ open } = await import('svk-bench-adapter'));
});
await phase('first request', async (count) => {
  client = await open?.(settings.kubeconfig);
  await count(client?.readLease('kube-node-lease', settings.lease) ?? Promise.reject(new Error('no client')));
});
const c = client as BenchClient;
const { namespace, node, pods } = settings;

await phase('heartbeat and status mix', async (count) => {
  for (let round = 0; round < settings.rounds; round++) {
    const now = new Date().toISOString();
    await count(c.readLease('kube-node-lease', settings.lease));
    await count(
      c.patchNodeStatus(node, {
        status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Bench', lastHeartbeatTime: now }] },
      }),
    );
    await count(c.readNode(node));
    await count(c.listPods(node));
    const name = pods[round % pods.length] as string;
    const pod = await c.readPod(namespace, name).catch(() => undefined);
    await count(pod ? Promise.resolve() : Promise.reject(new Error(`pod ${name} not read`)));
    if (pod) await count(c.replacePodStatus(namespace, name, pod, `bench round ${round}`));
  }
});

await phase(`burst of ${settings.burst} pod reads, ${settings.concurrency} at a time`, async (count) => {
  let next = 0;
  const worker = async () => {
    while (next < settings.burst) {
      const i = next++;
      await count(c.readPod(namespace, pods[i % pods.length] as string));
    }
  };
  await Promise.all(Array.from({ length: settings.concurrency }, worker));
});
process.disconnect?.();
