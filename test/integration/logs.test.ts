/**
 * What the functions write to stdout (CloudWatch Logs in AWS), read from real
 * cold-start invocations in child processes against the real control plane:
 * every line about a pod names the request, the function (with the Lambda
 * fields under Powertools' names), the node and the pod; the level comes
 * from SVK_LOG_LEVEL; and neither the cluster token nor
 * a Secret's value resolved into a pod's env ever appears, also when every
 * request fails with 401 and client-node's errors get logged.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE, type PodEventDetail } from '../../lib/events/pod-event.ts';
import { loadKubeConfig } from '../../lib/kube/client.ts';
import { scheduledEvent } from '../../lib/local/lambda-context.ts';
import { toBusEvent } from '../../lib/local/put-events-entry.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  uniqueName,
} from '../support/kube.ts';
import { runTsx } from '../support/process.ts';

const env = testEnv();
const admin = adminClients(env);
const root = new URL('../..', import.meta.url).pathname;
const SECRET_VALUE = `db-password-${randomBytes(8).toString('hex')}`;
const kubeletToken = (await loadKubeConfig({ kubeconfigPath: env.kube.kubeletKubeconfig })).token ?? '';
const BAD_TOKEN = `svk-bad-token-${randomBytes(12).toString('hex')}`;

const node = uniqueName('logs');
const ns = uniqueName('logs');
let tableName = '';
let tmp = '';
let badKubeconfig = '';
let pod: V1Pod;

interface Run {
  code: number | null;
  lines: Array<Record<string, unknown>>;
  raw: string;
  result: string;
}

async function invoke(
  fn: string,
  module: string,
  event: unknown,
  extraEnv: Record<string, string>,
  timeoutMs = 20_000,
): Promise<Run> {
  const { code, stdout, stderr } = await runTsx(
    'test/support/invoke-handler.ts',
    [join(root, module), fn, String(timeoutMs), JSON.stringify(event)],
    {
      cwd: root,
      env: {
        ...process.env,
        ...functionEnv(tableName, { SVK_NODE_NAMES: node, SVK_LOG_LEVEL: 'trace', ...extraEnv }),
      },
    },
  );
  const lines = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
  return {
    code,
    lines,
    raw: stdout + stderr,
    result: stderr.split('\n').find((l) => l.startsWith('RESULT ')) ?? stderr,
  };
}

function podEvent(p: V1Pod): unknown {
  const detail: PodEventDetail = {
    v: 1,
    type: 'ADDED',
    node,
    namespace: ns,
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    resourceVersion: p.metadata?.resourceVersion ?? '0',
  };
  return toBusEvent(
    { Source: POD_EVENT_SOURCE, DetailType: POD_EVENT_DETAIL_TYPE, Detail: JSON.stringify(detail) },
    { id: randomBytes(8).toString('hex'), nowMs: Date.now(), account: '000000000000', region: 'local' },
  );
}

function assertNoSecrets(run: Run): void {
  for (const secret of [
    kubeletToken,
    BAD_TOKEN,
    SECRET_VALUE,
    Buffer.from(SECRET_VALUE).toString('base64'),
  ]) {
    assert.ok(!run.raw.includes(secret), `a secret reached the output:\n${run.raw}`);
  }
}

before(async () => {
  assert.ok(kubeletToken.length > 8, 'the kubelet kubeconfig authenticates with a token');
  tableName = (await freshTable(env)).name;
  tmp = mkdtempSync(join(tmpdir(), 'svk-logs-'));
  badKubeconfig = join(tmp, 'bad.kubeconfig');
  writeFileSync(
    badKubeconfig,
    readFileSync(env.kube.kubeletKubeconfig, 'utf8').replaceAll(kubeletToken, BAD_TOKEN),
  );
  await createTestNamespace(admin, ns);
  await admin.core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'db' }, stringData: { password: SECRET_VALUE } },
  });
  pod = await admin.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: 'web' },
      spec: {
        nodeName: node,
        tolerations: [{ operator: 'Exists' }],
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'app',
            image: 'registry.example/app:1',
            env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
          },
        ],
      },
    },
  });
});

after(async () => {
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('function logs', () => {
  it('pod-sync: every line names request, function (Lambda fields, cold start), node and pod; no token or Secret value', {
    timeout: 60_000,
  }, async () => {
    const run = await invoke('pod-sync', 'functions/pod-sync.ts', podEvent(pod), {});
    assert.equal(run.code, 0, run.raw);
    assert.match(run.result, /"status":"ok"/);
    assert.ok(run.lines.length > 0, 'pod-sync logged nothing at trace level');
    for (const line of run.lines) {
      assert.equal(line.function_name, 'pod-sync', JSON.stringify(line));
      assert.equal(typeof line.function_request_id, 'string', JSON.stringify(line));
      assert.equal(line.cold_start, true, JSON.stringify(line));
      assert.equal(line.function_arn, 'arn:aws:lambda:us-east-1:000000000000:function:pod-sync');
      assert.equal(line.function_memory_size, 256, JSON.stringify(line));
      assert.equal(line.service, 'serverless-virtual-kubelet', JSON.stringify(line));
      assert.equal(line.pod, `${ns}/web`, JSON.stringify(line));
      assert.equal(line.node, node, JSON.stringify(line));
      assert.equal(line.uid, pod.metadata?.uid, JSON.stringify(line));
    }
    assertNoSecrets(run);
  });

  it('honours SVK_LOG_LEVEL', { timeout: 60_000 }, async () => {
    const run = await invoke('pod-sync', 'functions/pod-sync.ts', podEvent(pod), { SVK_LOG_LEVEL: 'warn' });
    assert.equal(run.code, 0, run.raw);
    assert.deepEqual(
      run.lines.filter((l) => l.level !== 'WARN' && l.level !== 'ERROR' && l.level !== 'CRITICAL'),
      [],
    );
  });

  it('a rejected token is never logged: pod-sync and heartbeat with every request failing 401', {
    timeout: 90_000,
  }, async () => {
    const sync = await invoke('pod-sync', 'functions/pod-sync.ts', podEvent(pod), {
      SVK_KUBECONFIG: badKubeconfig,
    });
    assert.equal(sync.code, 1, sync.raw);
    assert.match(sync.result, /401|Unauthorized/i);
    assertNoSecrets(sync);

    const beat = await invoke(
      'heartbeat',
      'functions/heartbeat.ts',
      scheduledEvent(),
      { SVK_KUBECONFIG: badKubeconfig, SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS: '2000' },
      8_000,
    );
    assertNoSecrets(beat);
    const failures = beat.lines.filter((l) => l.err !== undefined);
    assert.ok(failures.length > 0, `the heartbeat logged no failed request:\n${beat.raw}`);
    assert.match(JSON.stringify(failures), /401|Unauthorized/i);
    for (const line of beat.lines) {
      assert.equal(line.function_name, 'heartbeat', JSON.stringify(line));
      assert.equal(typeof line.function_request_id, 'string', JSON.stringify(line));
    }
    assert.ok(
      beat.lines.some((l) => l.node === node),
      'no heartbeat line names the node',
    );
  });
});
