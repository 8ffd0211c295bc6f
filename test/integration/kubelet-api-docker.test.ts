/**
 * `kubectl logs` and the node proxy on real containers: the whole deployment
 * with SVK_PROVIDER=docker against the run's engine (Podman or Docker
 * Engine), the loopback kubelet API front, the real kube-apiserver (scheduler
 * included) and the real kubectl.
 * The pod's containers print known lines, so every answer is checked by its
 * content: what the containers wrote, nothing else and nothing lost.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import parsePrometheus from 'parse-prometheus-text-format';
import { createKubeletApiHandler } from '../../functions/kubelet-api.ts';
import { loadKubeConfig } from '../../lib/kube/client.ts';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { type LocalKubeletApi, startLocalKubeletApi } from '../../lib/local/local-kubelet-api.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { containerStatus, TEST_IMAGE, testEngine } from '../support/docker.ts';
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
import { frontSource, invokeStreaming, kubectl, kubectlStreaming } from '../support/kubelet-api.ts';
import { consecutiveFrom, logLines, numbered, numberOf, stampedLines } from '../support/log-lines.ts';

const env = testEnv();
const admin = adminClients(env);
const docker = testEngine(env);
const dir = mkdtempSync(join(tmpdir(), 'svk-kubelet-api-docker-'));
const node = uniqueName('kapi-docker');
const ns = uniqueName('kapi-docker');
const POD = 'talk';
const MiB = 1024 * 1024;

/** Three lines on two streams, then a tick every 0.2 s. */
const MAIN = `echo "main: hello"; echo "main: on stderr" >&2; echo "main: third"
i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done`;
/** A line, then one a second. */
const SIDE = `echo "side: ready"; i=0; while true; do echo "side $i"; i=$((i+1)); sleep 1; done`;
/**
 * Counts its lives in the pod's emptyDir; each prints until the test drops
 * /state/stop-<life>, then writes its last line in two parts with a stderr
 * line in between (the engine logs each part as it comes), and exits 1.
 */
const CRASH = `n=$(cat /state/lives 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/lives
echo "life $n starts"; echo "life $n on stderr" >&2
i=0; while [ ! -e /state/stop-$n ]; do echo "life $n line $i"; i=$((i+1)); sleep 0.2; done
printf "life $n ends"; sleep 0.3; echo "life $n stopping" >&2; sleep 0.3; echo " now"; exit 1`;

/** The whole log of the crash container's first life: each line once, each stream in its order. */
function assertFirstLife(text: string): void {
  const stderr = ['life 1 on stderr', 'life 1 stopping'];
  const lines = logLines(text, ...stderr);
  assert.deepEqual(
    lines,
    ['life 1 starts', ...numbered('life 1 line', 0, lines.length - 2), 'life 1 ends now'],
    text,
  );
  for (const line of stderr) assert.equal(logLines(text).filter((l) => l === line).length, 1, text);
}

let api: LocalKubeletApi;
let deployment: LocalDeployment;
let functions: Record<string, string | undefined>;

const logs = (...args: string[]) => kubectl(['logs', '-n', ns, POD, ...args]);

async function readPod(): Promise<V1Pod> {
  return admin.core.readNamespacedPod({ namespace: ns, name: POD });
}

/** Waits until the API server's pod satisfies `done` (pod-status writes what the engine runs). */
function untilPod(done: (pod: V1Pod) => boolean, what: string): Promise<V1Pod> {
  return waitFor(async () => ((p) => (done(p) ? p : undefined))(await readPod()), {
    timeoutMs: 90_000,
    intervalMs: 500,
    what,
  });
}

const running = (pod: V1Pod, name: string) => !!containerStatus(pod, name)?.state?.running;

/** Waits until `kubectl logs` of `container` satisfies `done`, and returns its output. */
function untilLog(container: string, done: (out: string) => boolean, what: string): Promise<string> {
  return waitFor(
    async () => {
      const out = await logs('-c', container);
      return out.code === 0 && done(out.stdout) ? out.stdout : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500, what },
  );
}

before(async () => {
  const { name: table } = await freshTable(env);
  functions = functionEnv(
    table,
    {
      SVK_NODE_NAMES: node,
      SVK_PROVIDER: 'docker',
      SVK_DOCKER_HOST: env.docker.host,
      SVK_DOCKER_NETWORK: env.docker.network,
      SVK_POD_STATUS_INTERVAL_SECONDS: '1',
    },
    env,
  );
  const ca = CertificateAuthority.open(dirname(env.kube.ca.cert));
  api = await startLocalKubeletApi({
    env: functions,
    kubeconfig: env.kube.kubeletApiKubeconfig,
    nodes: [node],
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
  await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
    timeoutMs: 60_000,
    what: `${node} Ready`,
  });
  await createTestNamespace(admin, ns);
  // Left to the scheduler: the node's default taint is tolerated, and the selector picks our node.
  await admin.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: POD },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': node },
        tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
        restartPolicy: 'Always',
        volumes: [{ name: 'state', emptyDir: {} }],
        containers: [
          {
            name: 'main',
            image: TEST_IMAGE,
            command: ['sh', '-c', MAIN],
            resources: { limits: { memory: '64Mi', cpu: '500m' } },
          },
          { name: 'side', image: TEST_IMAGE, command: ['sh', '-c', SIDE] },
          {
            name: 'crash',
            image: TEST_IMAGE,
            command: ['sh', '-c', CRASH],
            volumeMounts: [{ name: 'state', mountPath: '/state' }],
          },
        ],
      },
    },
  });
  await untilPod(
    (p) => p.spec?.nodeName === node && ['main', 'side', 'crash'].every((c) => running(p, c)),
    'the pod scheduled to our node with its three containers running',
  );
});

after(async () => {
  await deployment?.stop({ abortRunning: true });
  await api?.stop();
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
  // The deployment is stopped: what it had no time to remove is removed here.
  const left = await docker.listContainers({ all: true, filters: { label: [`${LABELS.namespace}=${ns}`] } });
  for (const c of left)
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('the kubelet API on real containers (docker provider)', () => {
  it('kubectl logs returns exactly the lines the container wrote, on both streams', async () => {
    const out = await untilLog('main', (text) => text.includes('tick 2\n'), 'three ticks of main');
    const lines = out.split('\n');
    assert.equal(lines.pop(), '', 'every line ends in a newline');
    assert.equal(lines.filter((l) => l === 'main: on stderr').length, 1, out);
    // Each stream keeps its own order; how the engine interleaves the two is its own.
    const stdout = lines.filter((l) => l !== 'main: on stderr');
    assert.deepEqual(stdout.slice(0, 2), ['main: hello', 'main: third'], out);
    assert.deepEqual(
      stdout.slice(2),
      numbered('tick', 0, stdout.length - 2),
      'then the ticks, each once, in order, none lost',
    );
  });

  it('-c picks the container', async () => {
    const side = await untilLog('side', (text) => text.includes('side 1\n'), 'two lines of side');
    const sideLines = logLines(side);
    assert.deepEqual(sideLines, ['side: ready', ...numbered('side', 0, sideLines.length - 1)]);
    const crash = await logs('-c', 'crash');
    assert.equal(crash.code, 0, crash.stderr);
    assert.ok(crash.stdout.startsWith('life 1 starts\n') || crash.stdout.startsWith('life 1 on stderr\n'));
    assert.ok(
      crash.stdout.split('\n').every((l) => l === '' || l.startsWith('life 1 ')),
      crash.stdout,
    );
  });

  it('--tail returns the last lines of the log', async () => {
    const before = numberOf(logLines((await logs('-c', 'main')).stdout).at(-1));
    const tail = await logs('-c', 'main', '--tail=3');
    assert.equal(tail.code, 0, tail.stderr);
    const lines = logLines(tail.stdout);
    const first = numberOf(lines[0]);
    assert.deepEqual(lines, numbered('tick', first, 3), tail.stdout);
    assert.ok(first + 2 >= before, `the tail (${tail.stdout}) is at least as recent as tick ${before}`);
    assert.equal((await logs('-c', 'main', '--tail=0')).stdout, '');
  });

  it('--timestamps prefixes each line with its RFC 3339 time, which parses and never goes back', async () => {
    const pod = await readPod();
    const started = Date.parse(String(containerStatus(pod, 'side')?.state?.running?.startedAt));
    const plain = logLines((await logs('-c', 'side')).stdout);
    const stamped = await logs('-c', 'side', '--timestamps');
    assert.equal(stamped.code, 0, stamped.stderr);
    const lines = stampedLines(stamped.stdout);
    assert.deepEqual(
      lines.slice(0, plain.length).map((l) => l.text),
      plain,
      'the same lines, stamped (the log only grew in between)',
    );
    for (const [i, line] of lines.entries()) {
      assert.match(line.stamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
      assert.ok(
        line.at >= started - 1_000 && line.at <= Date.now(),
        `${line.stamp} is in the container's life`,
      );
      if (i > 0) assert.ok(line.at >= (lines[i - 1]?.at ?? 0), `${line.stamp} after the line before it`);
    }
  });

  it('--since-time and --since leave out the lines written before the since point', async () => {
    // Main has ticked for a few seconds after its first lines.
    const full = await waitFor(
      async () => {
        const all = stampedLines((await logs('-c', 'main', '--timestamps')).stdout);
        const hello = all.find((l) => l.text === 'main: hello');
        return hello && (all.at(-1)?.at ?? 0) >= hello.at + 5_000 ? all : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000, what: 'five seconds of ticks' },
    );
    const helloAt = full.find((l) => l.text === 'main: hello')?.at ?? 0;

    // A whole second as the since point: the engine's whole-second stamps tell each line's side exactly.
    const sinceTime = new Date(Math.floor(helloAt / 1000) * 1000 + 2_000);
    const fromTime = await logs('-c', 'main', '--timestamps', `--since-time=${sinceTime.toISOString()}`);
    assert.equal(fromTime.code, 0, fromTime.stderr);
    const after = stampedLines(fromTime.stdout);
    const expected = full.filter((l) => l.at >= sinceTime.getTime());
    assert.ok(expected.length > 0);
    assert.deepEqual(
      after.slice(0, expected.length),
      expected,
      'every line from the since point on, in order',
    );
    assert.ok(after.every((l) => l.at >= sinceTime.getTime() && l.text.startsWith('tick ')));

    // A number of seconds back from now: the point falls after main's first lines.
    const askedAt = Date.now();
    const seconds = Math.floor((askedAt - (Math.floor(helloAt / 1000) * 1000 + 1_000)) / 1000) - 1;
    assert.ok(seconds >= 2, `${seconds} s back`);
    const recent = await logs('-c', 'main', '--timestamps', `--since=${seconds}s`);
    const answeredAt = Date.now();
    assert.equal(recent.code, 0, recent.stderr);
    const kept = stampedLines(recent.stdout);
    const since = { earliest: askedAt - seconds * 1000, latest: answeredAt - seconds * 1000 };
    assert.ok(kept.length > 0 && kept.every((l) => l.text.startsWith('tick ')), recent.stdout);
    // A whole-second stamp stands for that second: only a line whose whole second ended before the point is out.
    for (const l of kept)
      assert.ok(l.at + 1_000 > since.earliest, `${l.stamp} ${l.text} is older than asked`);
    for (const l of full.filter((f) => f.at >= since.latest))
      assert.ok(
        kept.some((k) => k.text === l.text),
        `${l.stamp} ${l.text} was written after the since point`,
      );
    assert.deepEqual(
      kept.map((l) => l.text),
      consecutiveFrom(kept.map((l) => l.text)),
    );
  });

  it('-f streams new lines as they are written and ends when the container exits', async () => {
    const seen = await untilLog('crash', (t) => t.includes('life 1 line 1\n'), 'life 1 printing');
    const before = logLines(seen).length;
    const follow = kubectlStreaming(['logs', '-n', ns, POD, '-c', 'crash', '-f'], 90_000);
    await waitFor(() => logLines(follow.stdout()).length > before + 2, {
      timeoutMs: 30_000,
      what: `lines written after the follow began; it has ${follow.stdout()}`,
    });
    // The container's loop ends when its stop file appears: the follow must end with it.
    const id = containerStatus(await readPod(), 'crash')?.containerID?.replace('docker://', '') ?? '';
    const exec = await docker.getContainer(id).exec({ Cmd: ['touch', '/state/stop-1'], AttachStdout: true });
    // Read to its end: the engine closes the exec's connection when the command is done.
    await finished((await exec.start({})).resume());
    assert.equal((await exec.inspect()).ExitCode, 0, 'the stop file was made');
    const ended = await follow.ended;
    assert.equal(ended.code, 0, `kubectl ended on its own: ${ended.stderr}`);
    assertFirstLife(ended.stdout);
  });

  it('--previous shows the lines of the instance before the restart', async () => {
    await untilPod(
      (p) => containerStatus(p, 'crash')?.restartCount === 1 && running(p, 'crash'),
      'crash restarted once and running',
    );
    const previous = await logs('-c', 'crash', '--previous');
    assert.equal(previous.code, 0, previous.stderr);
    assertFirstLife(previous.stdout);
    const current = await untilLog('crash', (t) => t.includes('life 2 line 0\n'), 'life 2 printing');
    assert.ok(
      current.split('\n').every((l) => l === '' || l.startsWith('life 2 ')),
      current,
    );
  });

  it('a follow of a container that runs on ends at SVK_KUBELET_API_FOLLOW_SECONDS', async () => {
    const handler = createKubeletApiHandler({
      ...asKubeletApi(functions, env),
      SVK_KUBELET_API_FOLLOW_SECONDS: '2',
    });
    const token = (await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig })).token ?? '';
    const query = { follow: 'true', tailLines: '1' };
    const answer = await invokeStreaming(handler, {
      httpMethod: 'GET',
      path: `/containerLogs/${ns}/${POD}/main`,
      headers: { Host: `${api.addresses[node]}:${api.port}`, Authorization: `Bearer ${token}` },
      queryStringParameters: query,
      multiValueQueryStringParameters: { follow: ['true'], tailLines: ['1'] },
      requestContext: {
        requestId: 'follow-bound',
        ...frontSource(functions),
        identity: { clientCert: null },
      },
    });
    assert.equal(answer.status, 200);
    const lines = logLines(answer.body);
    assert.ok(lines.length >= 2, `the last line, then what main printed for 2 s: ${answer.body}`);
    assert.deepEqual(lines, consecutiveFrom(lines));
  });

  it('/proxy/stats/summary has the node and one entry per container, with real memory', async () => {
    const summary = await waitFor(
      async () => {
        const raw = await kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy/stats/summary`]);
        const parsed = raw.code === 0 ? JSON.parse(raw.stdout) : undefined;
        const main = parsed?.pods?.[0]?.containers?.find((c: { name: string }) => c.name === 'main');
        // The CPU rate needs a second sample of the container: the first summary has none.
        return main?.cpu?.usageNanoCores > 0 ? parsed : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000, what: 'a summary with main’s CPU rate' },
    );
    assert.equal(summary.node.nodeName, node);
    assert.equal(summary.pods.length, 1);
    const [pod] = summary.pods;
    assert.deepEqual(pod.podRef, { name: POD, namespace: ns, uid: (await readPod()).metadata?.uid });
    const byName = new Map<string, Record<string, Record<string, number>>>(
      pod.containers.map((c: { name: string }) => [c.name, c]),
    );
    assert.deepEqual([...byName.keys()].sort(), ['crash', 'main', 'side']);
    for (const [name, c] of byName) {
      const memory = c.memory ?? {};
      assert.ok((memory.workingSetBytes ?? 0) > 0, `${name} working set ${memory.workingSetBytes}`);
      assert.ok((memory.usageBytes ?? 0) >= (memory.workingSetBytes ?? 0), name);
      assert.ok((c.cpu?.usageCoreNanoSeconds ?? 0) > 0, `${name} has used CPU`);
    }
    assert.ok((byName.get('main')?.memory?.workingSetBytes ?? 0) < 64 * MiB, 'under main’s 64Mi limit');
    const total = [...byName.values()].reduce((n, c) => n + (c.memory?.workingSetBytes ?? 0), 0);
    assert.equal(pod.memory.workingSetBytes, total, 'the pod is the sum of its containers');
    assert.equal(summary.node.memory.workingSetBytes, total, 'the node is the sum of its pods');
  });

  it('/proxy/metrics/resource parses as Prometheus text, with a sample per container', async () => {
    const raw = await kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy/metrics/resource`]);
    assert.equal(raw.code, 0, raw.stderr);
    const families = new Map(parsePrometheus(raw.stdout).map((f) => [f.name, f]));
    for (const name of ['container_cpu_usage_seconds_total', 'container_memory_working_set_bytes']) {
      const samples = families.get(name)?.metrics ?? [];
      const ours = samples.filter((m) => m.labels?.namespace === ns && m.labels.pod === POD);
      assert.deepEqual(ours.map((m) => m.labels?.container).sort(), ['crash', 'main', 'side'], name);
      for (const m of ours) assert.ok(Number(m.value) > 0, `${name} ${m.labels?.container} = ${m.value}`);
    }
    for (const name of ['pod_memory_working_set_bytes', 'node_memory_working_set_bytes'])
      assert.ok(Number(families.get(name)?.metrics[0]?.value) > 0, `${name} in ${raw.stdout}`);
    assert.equal(families.get('container_cpu_usage_seconds_total')?.type, 'COUNTER');
    assert.equal(families.get('scrape_error')?.metrics[0]?.value, '0');
  });
});
