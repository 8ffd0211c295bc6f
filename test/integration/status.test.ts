/**
 * `npm run status` against a known state on the real control plane and
 * DynamoDB Local: a node registered and kept Ready by the heartbeat, the
 * locks of the running functions, a pod run to Running through the pipeline,
 * and a reconciler status record. The command runs as the virtual kubelet's
 * identity, as an operator would run it with the functions' configuration.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PACKAGE_RELEASE } from '../../lib/config/env-variables.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import { RECONCILER_STATUS_KEY, type StatusReport } from '../../lib/status-report/collect.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  readNode,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';
import { type ProcessOutput, runTsx } from '../support/process.ts';

const admin = adminClients();
const root = new URL('../..', import.meta.url).pathname;

let node = '';
let ns = '';
let tableName = '';
let table: StateTable;
let deployment: LocalDeployment;

function runStatus(args: string[]): Promise<ProcessOutput> {
  return runTsx('scripts/status.ts', args, {
    cwd: root,
    env: { ...process.env, ...functionEnv(tableName, { SVK_NODE_NAMES: node }) },
  });
}

before(async () => {
  const fresh = await freshTable();
  table = fresh.table;
  tableName = fresh.name;
  node = uniqueName('status');
  ns = uniqueName('status');
  deployment = new LocalDeployment({
    env: functionEnv(tableName, { SVK_NODE_NAMES: node }),
    rateMs: 20_000,
    timeoutMs: 45_000,
    syncRetryDelayMs: 1_000,
  });
  deployment.start();
  await createTestNamespace(admin, ns);
  await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
    timeoutMs: 60_000,
    what: `${node} Ready`,
  });
  await admin.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: 'web' },
      spec: {
        nodeName: node,
        tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
        containers: [{ name: 'app', image: 'registry.example/app:1' }],
      },
    },
  });
  await waitFor(
    async () =>
      (await admin.core.readNamespacedPod({ namespace: ns, name: 'web' })).status?.phase === 'Running',
    { timeoutMs: 90_000, what: 'pod web Running' },
  );
  // The deployment's own reconciler leads and records its status.
  await waitFor(async () => (await table.get(RECONCILER_STATUS_KEY))?.state === 'done', {
    timeoutMs: 90_000,
    what: 'the reconciler status done',
  });
});

after(async () => {
  await deployment?.stop({ abortRunning: true });
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
});

describe('status command', () => {
  it('reports nodes, locks, reconciler, pods and the dead-letter queue as JSON', {
    timeout: 60_000,
  }, async () => {
    const { code, stdout, stderr } = await runStatus(['--json']);
    assert.equal(code, 0, stderr);
    const report = JSON.parse(stdout) as StatusReport;
    assert.deepEqual(report.errors, []);
    assert.equal(report.table, tableName);

    const [n] = report.nodes;
    assert.equal(report.nodes.length, 1);
    assert.equal(n?.name, node);
    assert.equal(n?.registered, true);
    assert.equal(n?.ready, 'True');
    assert.equal(n?.configOk?.status, 'True');
    assert.ok(n?.leaseAgeSeconds !== undefined && n.leaseAgeSeconds < 40, `lease age ${n?.leaseAgeSeconds}`);

    const lock = (name: string) => report.locks.find((l) => l.name === name);
    for (const name of ['heartbeat', 'pod-status', 'reconcile', `pod-watch#${node}`]) {
      const l = lock(name);
      assert.equal(l?.state, 'held', `${name}: ${JSON.stringify(l)}`);
      assert.ok((l?.epoch ?? 0) >= 1 && l?.owner, `${name}: ${JSON.stringify(l)}`);
    }

    assert.equal(report.reconciler?.state, 'done');
    assert.equal(report.reconciler?.version, PACKAGE_RELEASE);
    assert.equal(report.reconciler?.minCompatibleRelease, PACKAGE_RELEASE);

    const pod = await admin.core.readNamespacedPod({ namespace: ns, name: 'web' });
    assert.deepEqual(report.pods, [
      {
        node,
        pod: `${ns}/web`,
        uid: pod.metadata?.uid,
        known: true,
        applied: true,
        apiPhase: 'Running',
        providerPhase: 'Running',
      },
    ]);
    assert.equal(report.deadLetterQueue.depth, null);
    assert.match(report.deadLetterQueue.note ?? '', /^n\/a/);
  });

  it('prints the same state as a table', { timeout: 60_000 }, async () => {
    const { code, stdout, stderr } = await runStatus([]);
    assert.equal(code, 0, stderr);
    const lines = stdout.split('\n');
    const section = (title: string) =>
      lines.slice(lines.indexOf(title) + 1, lines.indexOf('', lines.indexOf(title)));
    assert.match(stdout, new RegExp(`table ${tableName}, provider mock`));
    const nodes = section('NODES');
    assert.match(nodes[0] ?? '', /^NAME\s+REGISTERED\s+READY\s+REASON\s+LEASE AGE\s+CONFIGOK$/);
    assert.match(
      nodes[1] ?? '',
      new RegExp(`^${node}\\s+yes\\s+True\\s+KubeletReady\\s+\\d+(\\.\\d)?s\\s+True \\(LocalConfig\\)$`),
    );
    const locks = section('LOCKS');
    assert.match(locks.find((l) => l.startsWith('heartbeat ')) ?? '', /^heartbeat\s+held\s+\d+\s+\S+\s+\d/);
    assert.match(locks.find((l) => l.startsWith('reconcile ')) ?? '', /^reconcile\s+held\s+\d+\s+\S+\s+\d/);
    assert.match(section('RECONCILER').join('\n'), /state\s+done/);
    const pods = section('PODS');
    assert.match(
      pods[1] ?? '',
      new RegExp(`^${node}\\s+${ns}/web\\s+[0-9a-f-]{8}\\s+yes\\s+yes\\s+Running\\s+Running\\s+-$`),
    );
    assert.match(section('DEAD-LETTER QUEUE')[0] ?? '', /^n\/a/);
    assert.ok(!lines.includes('ERRORS'));
  });
});
