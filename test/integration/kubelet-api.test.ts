/**
 * `kubectl logs` and the node proxy reach our virtual nodes: the real kubectl
 * and kube-apiserver (which authenticates to the kubelet API with its kubelet
 * client certificate and verifies the serving certificate against the
 * cluster CA), the loopback front, the kubelet-api function, and the whole
 * pipeline (heartbeat publishing each node's own 127.x address and the
 * front's port; pod-watch, pod-sync and pod-status running mock pods).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import parsePrometheus from 'parse-prometheus-text-format';
import { createKubeletApiHandler } from '../../functions/kubelet-api.ts';
import { loadKubeConfig } from '../../lib/kube/client.ts';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { type LocalKubeletApi, startLocalKubeletApi } from '../../lib/local/local-kubelet-api.ts';
import { MOCK_FINISH_AFTER_ANNOTATION } from '../../lib/provider/mock/mock-pod-plan.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  asKubeletApi,
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
import { frontSource, invokeStreaming, kubectl } from '../support/kubelet-api.ts';

const env = testEnv();
const admin = adminClients(env);
const dir = mkdtempSync(join(tmpdir(), 'svk-kubelet-api-'));
const nodeA = uniqueName('kapi-a');
const nodeB = uniqueName('kapi-b');
const ns = uniqueName('kapi');
const STARTED = (container: string) => `mock: started container ${container} (image busybox)`;

let api: LocalKubeletApi;
let deployment: LocalDeployment;
let functions: Record<string, string | undefined>;

async function runPod(
  name: string,
  node: string,
  containers: V1Container[],
  annotations = {},
): Promise<V1Pod> {
  await admin.core.createNamespacedPod({
    namespace: ns,
    body: { metadata: { name, annotations }, spec: { nodeName: node, containers } },
  });
  return waitFor(
    async () => {
      const pod = await admin.core.readNamespacedPod({ namespace: ns, name });
      return pod.status?.phase === 'Running' ? pod : undefined;
    },
    { timeoutMs: 60_000, what: `pod ${name} Running` },
  );
}

before(async () => {
  const { name: table } = await freshTable(env);
  functions = functionEnv(table, { SVK_NODE_NAMES: `${nodeA},${nodeB}`, SVK_NODE_TAINTS: '' }, env);
  const ca = CertificateAuthority.open(dirname(env.kube.ca.cert));
  api = await startLocalKubeletApi({
    env: functions,
    kubeconfig: env.kube.kubeletApiKubeconfig,
    nodes: [nodeA, nodeB],
    ca,
    dir,
  });
  deployment = new LocalDeployment({
    env: functions,
    rateMs: 20_000,
    timeoutMs: 45_000,
    syncRetryDelayMs: 1_000,
  });
  deployment.start();
  for (const node of [nodeA, nodeB]) {
    await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
      timeoutMs: 60_000,
      what: `${node} Ready`,
    });
  }
  await createTestNamespace(admin, ns);
});

after(async () => {
  await deployment?.stop({ abortRunning: true });
  await api?.stop();
  await deleteTestNamespace(admin, ns);
  await Promise.all([nodeA, nodeB].map((node) => deleteNodeAndLease(admin, node)));
  rmSync(dir, { recursive: true, force: true });
});

describe('the kubelet API through the real API server and kubectl', () => {
  it('each node publishes its own loopback address and the front port, with no Hostname ahead of it', async () => {
    for (const node of [nodeA, nodeB]) {
      const published = await readNode(admin, node);
      const addresses = published?.status?.addresses?.map(({ type, address }) => ({ type, address }));
      assert.deepEqual(addresses, [{ type: 'InternalIP', address: api.addresses[node] }]);
      assert.equal(published?.status?.daemonEndpoints?.kubeletEndpoint?.Port, api.port);
    }
    assert.notEqual(api.addresses[nodeA], api.addresses[nodeB]);
  });

  it('kubectl logs returns what the command prints; --tail, --timestamps, --limit-bytes, -c work', async () => {
    await runPod('talker', nodeA, [
      {
        name: 'main',
        image: 'busybox',
        command: ['sh', '-c', 'echo hello world; for i in 1 2 3; do echo line $i; done'],
      },
      { name: 'sidecar', image: 'busybox', command: ['echo', 'sidecar says hi'] },
    ]);
    const all = await kubectl(['logs', '-n', ns, 'talker', '-c', 'main']);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(all.stdout, `${STARTED('main')}\nhello world\nline 1\nline 2\nline 3\n`);

    const tail = await kubectl(['logs', '-n', ns, 'talker', '-c', 'main', '--tail=2']);
    assert.equal(tail.stdout, 'line 2\nline 3\n');

    const sidecar = await kubectl(['logs', '-n', ns, 'talker', '-c', 'sidecar']);
    assert.equal(sidecar.stdout, `${STARTED('sidecar')}\nsidecar says hi\n`);

    const stamped = await kubectl(['logs', '-n', ns, 'talker', '-c', 'main', '--timestamps']);
    const lines = stamped.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 5);
    for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z \S/);

    const cut = await kubectl(['logs', '-n', ns, 'talker', '-c', 'main', '--limit-bytes=5']);
    assert.equal(cut.stdout, 'mock:');
  });

  it('--since and --since-time keep only later lines', async () => {
    const pod = await runPod('ticker', nodeA, [
      {
        name: 'main',
        image: 'busybox',
        command: ['sh', '-c', 'echo begin; while true; do echo tick; sleep 1; done'],
      },
    ]);
    const started = Date.parse(String(pod.status?.containerStatuses?.[0]?.state?.running?.startedAt));
    // Let it print for a while, so that a window of a few seconds excludes the first lines.
    await waitFor(
      async () => {
        const out = await kubectl(['logs', '-n', ns, 'ticker']);
        return out.stdout.split('\n').filter((l) => l === 'tick').length >= 6;
      },
      { timeoutMs: 60_000, intervalMs: 1_000, what: 'six ticks' },
    );

    const before = Date.now();
    const recent = await kubectl(['logs', '-n', ns, 'ticker', '--since=3s', '--timestamps']);
    assert.equal(recent.code, 0, recent.stderr);
    assert.ok(!recent.stdout.includes('begin'), recent.stdout);
    for (const line of recent.stdout.trimEnd().split('\n').filter(Boolean)) {
      const at = Date.parse(line.slice(0, line.indexOf(' ')));
      assert.ok(at >= before - 3_000, `${line} is older than the 3 s asked for`);
    }

    const sinceTime = new Date(Math.ceil((started + 3_000) / 1000) * 1000)
      .toISOString()
      .replace('.000Z', 'Z');
    const later = await kubectl(['logs', '-n', ns, 'ticker', `--since-time=${sinceTime}`, '--timestamps']);
    assert.ok(!later.stdout.includes('begin'));
    const first = later.stdout.split('\n')[0] ?? '';
    assert.ok(Date.parse(first.slice(0, first.indexOf(' '))) >= Date.parse(sinceTime), first);
  });

  it('kubectl logs -f streams until the container exits', async () => {
    await runPod(
      'job',
      nodeA,
      [
        {
          name: 'main',
          image: 'busybox',
          command: ['sh', '-c', 'while true; do echo working; sleep 1; done'],
        },
      ],
      {
        [MOCK_FINISH_AFTER_ANNOTATION]: '6',
      },
    );
    const followed = await kubectl(['logs', '-n', ns, 'job', '-f'], 120_000);
    assert.equal(followed.code, 0, followed.stderr);
    const lines = followed.stdout.trimEnd().split('\n');
    assert.equal(lines[0], STARTED('main'));
    assert.deepEqual(lines.slice(1, -1), Array(6).fill('working'));
    assert.equal(lines.at(-1), 'mock: container main exited with code 0');
    // The pod's status follows (pod-status), so later scenarios see it as finished, not running.
    await waitFor(
      async () =>
        (await admin.core.readNamespacedPod({ namespace: ns, name: 'job' })).status?.phase === 'Succeeded',
      { timeoutMs: 60_000, what: 'job Succeeded' },
    );
  });

  it('ends a follow of a container that runs on after SVK_KUBELET_API_FOLLOW_SECONDS', async () => {
    // The handler itself, with a 2 s bound (the front's own handler keeps the default 300 s).
    const handler = createKubeletApiHandler({
      ...asKubeletApi(functions, env),
      SVK_KUBELET_API_FOLLOW_SECONDS: '2',
    });
    const token = (await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig })).token ?? '';
    const answer = await invokeStreaming(handler, {
      httpMethod: 'GET',
      path: `/containerLogs/${ns}/ticker/main`,
      headers: { Host: `${api.addresses[nodeA]}:${api.port}`, Authorization: `Bearer ${token}` },
      queryStringParameters: { follow: 'true', tailLines: '1' },
      multiValueQueryStringParameters: { follow: ['true'], tailLines: ['1'] },
      requestContext: {
        requestId: 'follow-bound',
        ...frontSource(functions),
        identity: { clientCert: null },
      },
    });
    assert.equal(answer.status, 200);
    // The last line so far, then what the ticker printed during the 2 s: the stream ended on its own.
    const lines = answer.body.trimEnd().split('\n');
    assert.ok(lines.length >= 1 && lines.every((l) => l === 'tick'), answer.body);
  });

  it('--previous of a container that never restarted is refused with the kubelet’s message', async () => {
    const previous = await kubectl(['logs', '-n', ns, 'talker', '-c', 'main', '--previous']);
    assert.notEqual(previous.code, 0);
    assert.match(previous.stderr, /previous terminated container "main" in pod "talker" not found/);
  });

  it('kubectl exec on a provider that serves no streams (the mock) is refused at once, saying why', async () => {
    const exec = await kubectl(['exec', '-n', ns, 'talker', '-c', 'main', '--', 'ls'], 60_000);
    assert.notEqual(exec.code, 0);
    assert.notEqual(exec.code, -1, 'kubectl ended on its own, it did not hang');
    assert.match(
      exec.stderr,
      new RegExp(`NotImplemented\\): the provider of node ${nodeA} does not serve exec`),
    );
  });

  it('/proxy/pods lists exactly the node’s pods', async () => {
    await runPod('on-b', nodeB, [{ name: 'main', image: 'busybox', command: ['echo', 'b'] }]);
    const raw = await kubectl(['get', '--raw', `/api/v1/nodes/${nodeA}/proxy/pods`]);
    assert.equal(raw.code, 0, raw.stderr);
    const list = JSON.parse(raw.stdout);
    assert.equal(list.kind, 'PodList');
    const names = list.items.map((p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort();
    assert.deepEqual(names, [`${ns}/job`, `${ns}/talker`, `${ns}/ticker`]);
    assert.ok(list.items.every((p: V1Pod) => p.spec?.nodeName === nodeA));
    const ofB = JSON.parse((await kubectl(['get', '--raw', `/api/v1/nodes/${nodeB}/proxy/pods`])).stdout);
    assert.deepEqual(
      ofB.items.map((p: V1Pod) => p.metadata?.name),
      ['on-b'],
    );
  });

  it('/proxy/stats/summary has the node and one entry per container of each running pod', async () => {
    const raw = await kubectl(['get', '--raw', `/api/v1/nodes/${nodeA}/proxy/stats/summary`]);
    assert.equal(raw.code, 0, raw.stderr);
    const summary = JSON.parse(raw.stdout);
    assert.equal(summary.node.nodeName, nodeA);
    assert.ok(summary.node.cpu.usageNanoCores > 0 && summary.node.memory.workingSetBytes > 0);
    const running = (await admin.core.listNamespacedPod({ namespace: ns })).items.filter(
      (p) => p.spec?.nodeName === nodeA && p.status?.phase === 'Running',
    );
    const expected = running.flatMap((p) =>
      (p.spec?.containers ?? []).map((c) => `${p.metadata?.name}/${c.name}`),
    );
    const reported = summary.pods.flatMap(
      (p: { podRef: { name: string }; containers: Array<{ name: string }> }) =>
        p.containers.map((c) => `${p.podRef.name}/${c.name}`),
    );
    assert.deepEqual(reported.sort(), expected.sort());
    const podSum = summary.pods.reduce(
      (n: number, p: { cpu: { usageNanoCores: number } }) => n + p.cpu.usageNanoCores,
      0,
    );
    assert.equal(summary.node.cpu.usageNanoCores, podSum, 'the node is the sum of its pods');
  });

  it('/proxy/metrics/resource parses as Prometheus text with the families metrics-server reads', async () => {
    const raw = await kubectl(['get', '--raw', `/api/v1/nodes/${nodeA}/proxy/metrics/resource`]);
    assert.equal(raw.code, 0, raw.stderr);
    const families = parsePrometheus(raw.stdout);
    const byName = new Map(families.map((f) => [f.name, f]));
    for (const name of [
      'container_cpu_usage_seconds_total',
      'container_memory_working_set_bytes',
      'node_cpu_usage_seconds_total',
      'node_memory_working_set_bytes',
      'pod_cpu_usage_seconds_total',
      'pod_memory_working_set_bytes',
      'scrape_error',
    ]) {
      assert.ok(byName.has(name), `${name} in ${raw.stdout}`);
      for (const sample of byName.get(name)?.metrics ?? [])
        assert.ok(Number.isFinite(Number(sample.value)), name);
    }
    assert.equal(byName.get('container_cpu_usage_seconds_total')?.type, 'COUNTER');
    const containers = byName.get('container_memory_working_set_bytes')?.metrics ?? [];
    assert.ok(
      containers.some(
        (m) => m.labels?.pod === 'talker' && m.labels.container === 'sidecar' && m.labels.namespace === ns,
      ),
    );
    assert.equal(byName.get('scrape_error')?.metrics[0]?.value, '0');
  });

  it('/proxy/healthz answers ok', async () => {
    const raw = await kubectl(['get', '--raw', `/api/v1/nodes/${nodeB}/proxy/healthz`]);
    assert.equal(raw.stdout, 'ok\n');
  });
});
