/**
 * `kubectl exec`, `attach` and `port-forward` on real containers: the whole
 * deployment with SVK_PROVIDER=docker against the run's engine, the loopback
 * kubelet API front, the real kube-apiserver (which passes the client's
 * upgrade through to the node, SPDY from kubectl, a WebSocket from other
 * clients) and the real kubectl v1.20.2.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import type { V1Pod } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { loadKubeConfig } from '../../lib/kube/client.ts';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { freePort } from '../../lib/local/free-ports.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { type LocalKubeletApi, startLocalKubeletApi } from '../../lib/local/local-kubelet-api.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { containerStatus, TEST_IMAGE, testEngine } from '../support/docker.ts';
import { testEnv } from '../support/env.ts';
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
import { KUBECTL, type KubectlResult, kubectl } from '../support/kubelet-api.ts';

const env = testEnv();
const admin = adminClients(env);
const docker = testEngine(env);
const dir = mkdtempSync(join(tmpdir(), 'svk-kubelet-api-streams-'));
const node = uniqueName('kapi-streams');
const ns = uniqueName('kapi-streams');
const POD = 'shell';
/** The front's idle timeout here: short, so that a stalled client is seen cut within the test. */
const IDLE_MS = 8_000;
/** How long a client has to open its streams. */
const CREATION_MS = 4_000;

let api: LocalKubeletApi;
let deployment: LocalDeployment;

/** Runs kubectl with `input` on its stdin (closed after it), as cluster admin. */
function kubectlWithInput(
  args: readonly string[],
  input: string,
  timeoutMs = 60_000,
): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = spawn(KUBECTL, ['--kubeconfig', env.kube.adminKubeconfig, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

const exec = (...args: string[]) => ['exec', '-n', ns, POD, ...args];

async function readPod(name = POD): Promise<V1Pod> {
  return admin.core.readNamespacedPod({ namespace: ns, name });
}

/** The engine's exec sessions of the pod's containers that still run. */
async function runningExecs(): Promise<string[]> {
  const listed = await docker.listContainers({
    all: true,
    filters: { label: [`${LABELS.namespace}=${ns}`] },
  });
  const running: string[] = [];
  for (const c of listed) {
    const info = await docker.getContainer(c.Id).inspect();
    for (const id of info.ExecIDs ?? []) {
      const state = await docker
        .getExec(id)
        .inspect()
        .catch(() => undefined);
      if (state?.Running) running.push(id);
    }
  }
  return running;
}

/** An HTTP GET on loopback; resolves with the status and body. */
function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path, timeout: 20_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

before(async () => {
  const { name: table } = await freshTable(env);
  const functions = functionEnv(
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
    streaming: { idleTimeoutMs: IDLE_MS, creationTimeoutMs: CREATION_MS },
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
  await admin.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: POD },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': node },
        tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
        restartPolicy: 'Never',
        containers: [
          { name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'echo main is up; sleep 100000'] },
          {
            name: 'web',
            image: TEST_IMAGE,
            command: [
              'sh',
              '-c',
              'mkdir -p /a /b; echo page-a > /a/index.html; echo page-b > /b/index.html; httpd -p 8080 -h /a; httpd -f -p 8081 -h /b',
            ],
          },
          {
            name: 'reader',
            image: TEST_IMAGE,
            stdin: true,
            command: [
              'sh',
              '-c',
              'echo reader is up; while read line; do echo "got $line"; done; sleep 100000',
            ],
          },
          { name: 'done', image: TEST_IMAGE, command: ['true'] },
        ],
      },
    },
  });
  await waitFor(
    async () => {
      const pod = await readPod();
      const running = (c: string) => !!containerStatus(pod, c)?.state?.running;
      return running('main') &&
        running('web') &&
        running('reader') &&
        containerStatus(pod, 'done')?.state?.terminated
        ? pod
        : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500, what: 'main, web and reader running, done terminated' },
  );
});

after(async () => {
  await deployment?.stop({ abortRunning: true });
  await api?.stop();
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, node);
  const left = await docker.listContainers({ all: true, filters: { label: [`${LABELS.namespace}=${ns}`] } });
  for (const c of left)
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('kubectl exec, attach and port-forward on real containers (docker provider)', () => {
  it('kubectl exec -i passes stdin, both output streams, and the exit code', async () => {
    const out = await kubectlWithInput(
      exec('-i', '-c', 'main', '--', 'sh', '-c', 'cat; echo to stderr >&2; exit 3'),
      'hello from stdin\n',
    );
    assert.equal(out.code, 3, `${out.stdout}\n${out.stderr}`);
    assert.equal(out.stdout, 'hello from stdin\n');
    assert.match(out.stderr, /^to stderr$/m);
    const ok = await kubectl(exec('-c', 'main', '--', 'echo', 'plain'));
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, 'plain\n');
  });

  it('kubectl exec -it runs on a terminal of the client size, and follows a resize', async () => {
    // The engine sizes an exec's terminal once it started: the command waits for a size, prints it, then
    // waits for it to change and prints the new one.
    const WATCH_SIZE =
      'size() { stty size 2>/dev/null; }; while [ -z "$(size)" ] || [ "$(size)" = "0 0" ]; do sleep 0.1; done; ' +
      'first=$(size); echo "$first"; while [ "$(size)" = "$first" ]; do sleep 0.1; done; size';
    // script(1) gives kubectl a terminal; kubectl sends its size, then each change (SIGWINCH) on the resize stream.
    const shell = `stty rows 33 cols 111; (sleep 2; stty rows 44 cols 122 </dev/tty) & ${KUBECTL} --kubeconfig ${env.kube.adminKubeconfig} exec -it -n ${ns} ${POD} -c main -- sh -c '${WATCH_SIZE}'`;
    const out = await new Promise<KubectlResult>((resolve) => {
      const file = join(dir, 'tty.sh');
      writeFileSync(file, shell);
      const child = spawn('script', ['-qfec', `sh ${file}`, '/dev/null'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString('utf8');
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code: code ?? -1, stdout, stderr: '' });
      });
    });
    assert.match(out.stdout, /33 111\r?\n/, out.stdout);
    assert.match(out.stdout, /44 122\r?\n/, out.stdout);
  });

  it('kubectl attach streams the main process and takes its stdin', async () => {
    const child = spawn(
      KUBECTL,
      ['--kubeconfig', env.kube.adminKubeconfig, 'attach', '-i', '-n', ns, POD, '-c', 'reader'],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    const closed = new Promise((resolve) => child.on('close', resolve));
    try {
      child.stdin.write('first line\n');
      await waitFor(async () => stdout.includes('got first line\n') || undefined, {
        timeoutMs: 30_000,
        what: `the reader's answer on attach (${stdout})`,
      });
      child.stdin.write('second line\n');
      await waitFor(async () => stdout.includes('got second line\n') || undefined, {
        timeoutMs: 30_000,
        what: 'the second answer',
      });
    } finally {
      child.kill('SIGKILL');
      await closed;
    }
    await waitFor(async () => api.liveStreams() === 0 || undefined, {
      timeoutMs: 30_000,
      what: 'the attach ended',
    });
  });

  it('kubectl port-forward forwards two ports at once, and reports a port nothing serves', async () => {
    const [a, b, c] = [await freePort('127.0.0.1'), await freePort('127.0.0.1'), await freePort('127.0.0.1')];
    const child = spawn(
      KUBECTL,
      [
        '--kubeconfig',
        env.kube.adminKubeconfig,
        'port-forward',
        '-n',
        ns,
        `pod/${POD}`,
        `${a}:8080`,
        `${b}:8081`,
        `${c}:81`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString('utf8');
    });
    const closed = new Promise((resolve) => child.on('close', resolve));
    try {
      await waitFor(async () => (output.match(/Forwarding from/g)?.length ?? 0) >= 3 || undefined, {
        timeoutMs: 30_000,
        what: `kubectl port-forward listening (${output})`,
      });
      const [pageA, pageB] = await Promise.all([httpGet(a, '/index.html'), httpGet(b, '/index.html')]);
      assert.deepEqual(pageA, { status: 200, body: 'page-a\n' });
      assert.deepEqual(pageB, { status: 200, body: 'page-b\n' });
      // A second connection on the same forward.
      assert.equal((await httpGet(a, '/index.html')).body, 'page-a\n');
      await assert.rejects(httpGet(c, '/'));
      await waitFor(
        async () =>
          // nc's own words when the engine delivers them, else the relay's exit (docker-streams.ts).
          /error forwarding port 81 to pod shell, uid [0-9a-f-]+: .*(refused|cannot connect to port 81 in the pod)/.test(
            output,
          ) || undefined,
        {
          timeoutMs: 30_000,
          what: `the refused port reported on the error stream (${output})`,
        },
      );
    } finally {
      child.kill('SIGTERM');
      await closed;
    }
    await waitFor(async () => api.liveStreams() === 0 || undefined, {
      timeoutMs: 30_000,
      what: 'the port-forward ended',
    });
    await waitFor(
      async () =>
        (
          await docker.listContainers({
            all: true,
            filters: { label: [`${LABELS.namespace}=${ns}`, `${LABELS.role}=relay`] },
          })
        ).length === 0 || undefined,
      { timeoutMs: 30_000, what: 'the relay container removed' },
    );
  });

  it('a WebSocket client execs through the API server (v4.channel.k8s.io) and gets the exit status', async () => {
    const context = await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig });
    const { headers, agent } = await context.connect();
    const url = new URL(`${context.server.replace(/^http/, 'ws')}/api/v1/namespaces/${ns}/pods/${POD}/exec`);
    for (const [k, v] of [
      ['container', 'main'],
      ['stdout', '1'],
      ['stderr', '1'],
      ['command', 'sh'],
      ['command', '-c'],
      ['command', 'echo remote execution test; exit 7'],
    ])
      url.searchParams.append(k as string, v as string);
    const ws = new WebSocket(url, ['v4.channel.k8s.io'], { headers, agent, ca: context.ca });
    const channels = new Map<number, string>();
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        const channel = data[0] ?? 0;
        channels.set(channel, (channels.get(channel) ?? '') + data.subarray(1).toString('utf8'));
      });
      ws.on('close', () => resolve());
      ws.on('error', reject);
    });
    assert.equal(channels.get(1), 'remote execution test\n');
    const status = JSON.parse(channels.get(3) ?? '{}');
    assert.equal(status.status, 'Failure');
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '7' }]);
  });

  it('exec in a container that is not running is refused with a clear error before any upgrade', async () => {
    const out = await kubectl(exec('-c', 'done', '--', 'true'));
    assert.notEqual(out.code, 0);
    assert.match(out.stderr, /container done of pod .*shell.* is not running/, out.stderr);
    const missing = await kubectl(exec('-c', 'nope', '--', 'true'));
    assert.notEqual(missing.code, 0);
  });

  it('a client that vanishes mid-exec leaves no running exec and no open stream', async () => {
    const child = spawn(
      KUBECTL,
      ['--kubeconfig', env.kube.adminKubeconfig, ...exec('-i', '-c', 'main', '--', 'cat')],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    const closed = new Promise((resolve) => child.on('close', resolve));
    child.stdin.write('still here\n');
    await waitFor(async () => stdout.includes('still here\n') || undefined, {
      timeoutMs: 30_000,
      what: 'cat echoing',
    });
    assert.equal(api.liveStreams(), 1);
    assert.equal((await runningExecs()).length, 1, 'cat runs as an engine exec');
    child.kill('SIGKILL');
    await closed;
    await waitFor(async () => api.liveStreams() === 0 || undefined, {
      timeoutMs: 30_000,
      what: 'the stream closed',
    });
    await waitFor(async () => (await runningExecs()).length === 0 || undefined, {
      timeoutMs: 30_000,
      what: 'no engine exec running',
    });
  });

  it('a client that stalls is cut: one that never opens its streams, and one that goes quiet', async () => {
    // Never opens its streams: an upgrade through the API server, then nothing.
    const context = await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig });
    const { headers } = await context.connect();
    const server = new URL(context.server);
    const socket = connect({
      host: server.hostname,
      port: Number(server.port),
      ca: context.ca,
      servername: server.hostname,
    });
    const started = Date.now();
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    const ended = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      [
        `POST /api/v1/namespaces/${ns}/pods/${POD}/exec?container=main&command=cat&stdin=true&stdout=true HTTP/1.1`,
        `Host: ${server.host}`,
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
        'Connection: Upgrade',
        'Upgrade: SPDY/3.1',
        'X-Stream-Protocol-Version: v4.channel.k8s.io',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    );
    await ended;
    assert.match(answer, /^HTTP\/1\.1 101 /, answer);
    const tookMs = Date.now() - started;
    assert.ok(tookMs >= CREATION_MS - 500 && tookMs < CREATION_MS + 20_000, `cut after ${tookMs} ms`);
    await waitFor(async () => api.liveStreams() === 0 || undefined, {
      timeoutMs: 10_000,
      what: 'no stream left',
    });
    // Goes quiet: an exec whose client sends nothing and whose command writes nothing idles out.
    const quiet = spawn(
      KUBECTL,
      ['--kubeconfig', env.kube.adminKubeconfig, ...exec('-i', '-c', 'main', '--', 'cat')],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const quietEnded = new Promise<number | null>((resolve) => quiet.on('close', resolve));
    await waitFor(async () => api.liveStreams() === 1 || undefined, {
      timeoutMs: 30_000,
      what: 'the quiet exec open',
    });
    const quietStarted = Date.now();
    await quietEnded;
    const quietMs = Date.now() - quietStarted;
    assert.ok(quietMs < IDLE_MS + 20_000, `kubectl's connection cut after ${quietMs} ms`);
    await waitFor(async () => api.liveStreams() === 0 || undefined, {
      timeoutMs: 10_000,
      what: 'no stream left',
    });
    await waitFor(async () => (await runningExecs()).length === 0 || undefined, {
      timeoutMs: 30_000,
      what: 'no engine exec running',
    });
  });
});
