/**
 * A cluster without the Lease API. The heartbeat function must fall
 * back to writing the node status every renew interval, so that the Ready
 * condition's lastHeartbeatTime (what the node lifecycle controller judges
 * when there is no lease) stays fresh.
 *
 * The shared control plane serves leases, so this file starts its own, with
 * coordination.k8s.io switched off, next to the shared DynamoDB Local.
 *
 * The 1.20 node lifecycle controller cannot judge here: it waits for its lease
 * informer to sync before monitoring any node, and a list of a missing API
 * never syncs (its log stays at "Waiting for caches to sync for taint"). So
 * "Ready never left True" alone proves nothing; the scenario also holds the
 * heartbeat to the controller's own rule without leases, with margin: Ready's
 * lastHeartbeatTime never older than 15 s (grace period 40 s).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoordinationApi } from '@kubernetes/client-node';
import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { apiStatusCode } from '../../lib/kube/client.ts';
import { createToolingClients, type ToolingClients } from '../../lib/kube/tooling-clients.ts';
import { type ControlPlane, startControlPlane } from '../../lib/local/control-plane.ts';
import { LocalLambdaRuntime } from '../../lib/local/lambda-runtime.ts';
import { freshTable, functionEnv, readNode, readyStatus, uniqueName, waitFor } from '../support/kube.ts';

const NO_LEASE_API = '--runtime-config=coordination.k8s.io/v1=false,coordination.k8s.io/v1beta1=false';
/** Invocations every 20 s with a 45 s timeout: a hand-over, and so a fresh fallback, every 20 s. */
const RATE_MS = 20_000;
const TIMEOUT_MS = 45_000;
const HOLD_MS = 60_000;
/** Renew interval (10 s) plus slack for a noisy machine and second-precision timestamps. */
const MAX_HEARTBEAT_AGE_MS = 15_000;

const dir = join(
  fileURLToPath(new URL('../../.local/', import.meta.url)),
  `test-no-lease-${randomBytes(3).toString('hex')}`,
);

interface HeartbeatSample {
  at: number;
  ready: string | undefined;
  /** Ready's lastHeartbeatTime, epoch ms. */
  heartbeat: number | undefined;
}

describe('heartbeat on a cluster without the Lease API', () => {
  let cp: ControlPlane | undefined;
  let admin: ToolingClients | undefined;
  const runtime = new LocalLambdaRuntime();
  let failed = false;

  /** Marks the run failed when `fn` throws, so that `after` keeps the logs. */
  const step = <T>(fn: () => Promise<T>) =>
    fn().catch((err: unknown) => {
      failed = true;
      throw err;
    });

  before(() =>
    step(async () => {
      cp = await startControlPlane({
        dir,
        scheduler: false,
        apiServerArgs: [NO_LEASE_API],
        log: (line) => process.stderr.write(`[no-lease control plane] ${line}\n`),
      });
      admin = createToolingClients(cp.adminKubeconfig);
    }),
  );

  after(async () => {
    await runtime.stopAll({ abortRunning: true });
    await cp?.stop();
    // Logs of a failed run stay for a look; .local/ is ignored by git.
    if (!failed) rmSync(dir, { recursive: true, force: true });
  });

  it('serves no coordination.k8s.io API', { timeout: 60_000 }, () =>
    step(async () => {
      assert.ok(cp && admin);
      const discovery = admin.config.makeApiClient(CoordinationApi);
      await assert.rejects(discovery.getAPIGroup(), (err) => apiStatusCode(err) === 404);
      await assert.rejects(
        admin.coordination.listNamespacedLease({ namespace: 'kube-node-lease' }),
        (err) => apiStatusCode(err) === 404,
      );
      // The namespace is the API server's own (system namespaces), not the Lease API's.
      await admin.core.readNamespace({ name: 'kube-node-lease' });
    }),
  );

  it(
    `turns Ready and stays Ready for ${HOLD_MS / 1000} s on status-only heartbeats`,
    {
      timeout: 5 * 60_000,
    },
    (t) =>
      step(async () => {
        assert.ok(cp && admin);
        const kube = admin;
        const { name: tableName } = await freshTable();
        const node = uniqueName('nolease');
        const env = functionEnv(tableName, { SVK_NODE_NAMES: node, SVK_KUBECONFIG: cp.kubeletKubeconfig });
        runtime.register({ name: 'heartbeat', handler: createHeartbeatHandler(env), timeoutMs: TIMEOUT_MS });
        const schedule = runtime.schedule('heartbeat', { rateMs: RATE_MS, startImmediately: true });

        await waitFor(async () => readyStatus(await readNode(kube, node)) === 'True', {
          timeoutMs: 20_000,
          what: `${node} Ready`,
        });
        const samples: HeartbeatSample[] = [];
        const started = Date.now();
        while (Date.now() - started < HOLD_MS) {
          const at = Date.now();
          const ready = (await readNode(kube, node))?.status?.conditions?.find((c) => c.type === 'Ready');
          const beat = ready?.lastHeartbeatTime ? new Date(ready.lastHeartbeatTime).getTime() : undefined;
          samples.push({ at, ready: ready?.status, heartbeat: beat });
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_000 - (Date.now() - at))));
        }
        schedule.stop();

        const judging = readFileSync(join(dir, 'logs', 'kube-controller-manager.log'), 'utf8').includes(
          'Caches are synced for taint',
        );
        const ages = samples.map((s) =>
          s.heartbeat === undefined ? Number.POSITIVE_INFINITY : s.at - s.heartbeat,
        );
        const maxAge = Math.max(...ages);
        const beats = [...new Set(samples.map((s) => s.heartbeat ?? 0))].sort((a, b) => a - b);
        const gaps = beats.slice(1).map((b, i) => b - (beats[i] ?? b));
        t.diagnostic(`node lifecycle controller monitoring nodes: ${judging}`);
        t.diagnostic(`lastHeartbeatTime gaps (ms): ${gaps.join(', ')}; max age ${maxAge} ms`);

        assert.ok(samples.length >= HOLD_MS / 1_000 - 5, `sampled ${samples.length} times`);
        assert.deepEqual(
          samples.filter((s) => s.ready !== 'True'),
          [],
          'the node never left Ready',
        );
        assert.ok(maxAge <= MAX_HEARTBEAT_AGE_MS, `Ready lastHeartbeatTime at most ${maxAge} ms old`);
        assert.ok(beats.length >= HOLD_MS / MAX_HEARTBEAT_AGE_MS, `${beats.length} status heartbeats`);
        assert.ok(
          gaps.every((g) => g <= MAX_HEARTBEAT_AGE_MS),
          `lastHeartbeatTime advanced every ≤ 15 s (gaps ${gaps.join(', ')} ms)`,
        );
      }),
  );
});
