import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { isProviderNotFound } from '../../lib/provider/provider.ts';
import {
  containerStatus,
  readAll,
  shellContainer,
  shellPod,
  testDockerProvider,
  testEngine,
  waitForPod,
} from '../support/docker.ts';
import { testEnv } from '../support/env.ts';
import { uniqueName, waitFor } from '../support/kube.ts';
import { StallingEngineProxy } from '../support/stalling-engine-proxy.ts';

describe('docker provider: logs, stats and node listing on a real engine', () => {
  const provider = testDockerProvider();
  const created: V1Pod[] = [];
  after(async () => {
    await Promise.all(created.map((p) => provider.deletePod(p).catch(() => undefined)));
  });

  it('serves a container log with tail, timestamps, limitBytes, since and the previous instance', async () => {
    const ns = uniqueName('ns');
    // Prints five lines (two on stderr, a moment later: Docker Engine copies each stream in its own
    // goroutine, so lines written to both within a moment are logged in either order).
    const pod = shellPod(
      ns,
      'logs',
      { main: 'for i in 1 2 3; do echo out $i; done; sleep 0.3; echo err 1 >&2; echo err 2 >&2; sleep 3600' },
      { restartPolicy: 'Always' },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'logs Running');
    const all = await waitFor(
      async () => {
        const text = await readAll(await provider.containerLogs(pod, 'main', {}));
        return text.split('\n').length >= 6 ? text : undefined;
      },
      { timeoutMs: 10_000, what: 'five log lines' },
    );
    assert.equal(all, 'out 1\nout 2\nout 3\nerr 1\nerr 2\n');
    assert.equal(
      await readAll(await provider.containerLogs(pod, 'main', { tailLines: 2 })),
      'err 1\nerr 2\n',
    );
    assert.equal(await readAll(await provider.containerLogs(pod, 'main', { limitBytes: 8 })), 'out 1\nou');
    const stamped = await readAll(
      await provider.containerLogs(pod, 'main', { timestamps: true, tailLines: 1 }),
    );
    assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z err 2\n$/);
    const future = new Date(Date.now() + 60_000);
    assert.equal(await readAll(await provider.containerLogs(pod, 'main', { since: future })), '');
    await assert.rejects(provider.containerLogs(pod, 'main', { previous: true }), (err: unknown) =>
      isProviderNotFound(err),
    );
    await assert.rejects(provider.containerLogs(pod, 'nope', {}), (err: unknown) => isProviderNotFound(err));
  });

  it('serves the log of the previous instance after a restart, and follows a running one', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(
      ns,
      'prev',
      {
        main: 'if [ -e /state/ran ]; then i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done; fi; touch /state/ran; echo first life; exit 1',
      },
      { restartPolicy: 'Always', volumes: [{ name: 'state', emptyDir: {} }] },
    );
    const main = pod.spec?.containers[0];
    if (main) main.volumeMounts = [{ name: 'state', mountPath: '/state' }];
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(
      provider,
      pod,
      (p) => containerStatus(p, 'main')?.restartCount === 1 && !!containerStatus(p, 'main')?.state?.running,
      'the second instance running',
    );
    assert.equal(
      await readAll(await provider.containerLogs(pod, 'main', { previous: true })),
      'first life\n',
    );
    const abort = new AbortController();
    const lines: string[] = [];
    const stream = await provider.containerLogs(pod, 'main', { follow: true, tailLines: 1 }, abort.signal);
    try {
      for await (const chunk of stream) {
        lines.push(...Buffer.from(chunk).toString().split('\n').filter(Boolean));
        if (lines.length >= 4) break;
      }
    } finally {
      abort.abort();
    }
    assert.ok(
      lines.every((l) => /^tick \d+$/.test(l)),
      lines.join('|'),
    );
    const numbers = lines.map((l) => Number(l.split(' ')[1]));
    assert.deepEqual(
      numbers,
      [...numbers].sort((a, b) => a - b),
      'in order, as written',
    );
  });

  it('reports CPU and memory of running containers, and lists the pods of a node only', async () => {
    const ns = uniqueName('ns');
    const node = uniqueName('vk');
    const busy = shellPod(
      ns,
      'busy',
      { spin: 'while true; do :; done', idle: 'sleep 3600' },
      { restartPolicy: 'Always', node },
    );
    const spin = busy.spec?.containers[0];
    if (spin) spin.resources = { limits: { cpu: '250m', memory: '64Mi' } };
    const elsewhere = shellPod(ns, 'elsewhere', { main: 'sleep 3600' }, { restartPolicy: 'Always' });
    created.push(busy, elsewhere);
    await Promise.all([provider.createPod(busy), provider.createPod(elsewhere)]);
    await waitForPod(provider, busy, (p) => p.status?.phase === 'Running', 'busy Running');

    const listed = await provider.listPods(node);
    assert.deepEqual(
      listed.map((p) => p.metadata?.name),
      ['busy'],
    );
    const inspected = await testEngine()
      .getContainer(containerStatus(listed[0] ?? {}, 'spin')?.containerID?.replace('docker://', '') ?? '')
      .inspect();
    assert.equal(inspected.HostConfig.NanoCpus, 250_000_000, 'the CPU limit is the engine limit');
    assert.equal(inspected.HostConfig.Memory, 64 * 1024 * 1024, 'the memory limit is the engine limit');

    await provider.podStats(node); // the first sample: no rate yet
    const usage = await waitFor(
      async () => {
        const [pod] = await provider.podStats(node);
        const s = pod?.containers.find((c) => c.name === 'spin');
        return s?.cpu?.usageNanoCores !== undefined && s.cpu.usageNanoCores > 0 ? pod : undefined;
      },
      { timeoutMs: 15_000, what: 'a CPU rate for the spinning container' },
    );
    assert.equal(usage.name, 'busy');
    assert.deepEqual(usage.containers.map((c) => c.name).sort(), ['idle', 'spin']);
    const spinning = usage.containers.find((c) => c.name === 'spin');
    assert.ok((spinning?.memory?.workingSetBytes ?? 0) > 0);
    assert.ok((spinning?.cpu?.usageCoreNanoSeconds ?? 0) > 0);
  });

  it('passes env, args and workingDir to the container', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(ns, 'env', {});
    if (pod.spec) {
      pod.spec.containers = [
        shellContainer('main', '', {
          command: ['sh', '-c'],
          args: ['echo "$GREETING from $(pwd)"'],
          workingDir: '/tmp',
          env: [{ name: 'GREETING', value: 'hello' }],
        }),
      ];
    }
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Succeeded', 'env Succeeded');
    assert.equal(await readAll(await provider.containerLogs(pod, 'main', {})), 'hello from /tmp\n');
  });
});

describe('docker provider: a container log streams from the engine, follow or not', () => {
  const env = testEnv();
  const provider = testDockerProvider();
  const dir = mkdtempSync(join(tmpdir(), 'svk-log-stream-'));
  let proxy: StallingEngineProxy;
  let viaProxy: ReturnType<typeof testDockerProvider>;
  let pod: V1Pod;
  // 30,000 lines of 11 bytes ("line 00001\n"): about 570 KB of frames from the engine.
  const LINES = 30_000;

  before(async () => {
    // Lets the first 16 KiB of a log answer through, then holds the rest back.
    proxy = await StallingEngineProxy.start(
      env.docker.host.replace(/^unix:\/\//, ''),
      join(dir, 'engine.sock'),
      16 * 1024,
    );
    viaProxy = testDockerProvider({ docker: new Docker({ socketPath: proxy.socketPath }) });
    pod = shellPod(uniqueName('ns'), 'long-log', {
      main: `seq -w 1 ${LINES} | sed 's/^/line /'; sleep 3600`,
    });
    await provider.createPod(pod);
    await waitFor(
      async () =>
        (await readAll(await provider.containerLogs(pod, 'main', { tailLines: 1 }))) === `line ${LINES}\n`,
      { timeoutMs: 30_000, what: 'the whole log written' },
    );
  });

  after(async () => {
    await provider.deletePod(pod).catch(() => undefined);
    await proxy?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The first `lines` lines of the log. */
  async function firstLines(stream: AsyncIterable<Uint8Array>, lines: number): Promise<string[]> {
    let text = '';
    for await (const chunk of stream) {
      text += Buffer.from(chunk).toString('utf8');
      if (text.split('\n').length > lines) break;
    }
    return text.split('\n').slice(0, lines);
  }

  it('hands over a non-follow log’s first lines while the engine is still sending the rest (not read whole first)', async () => {
    const abort = new AbortController();
    try {
      const lines = await within(
        (async () => firstLines(await viaProxy.containerLogs(pod, 'main', {}, abort.signal), 100))(),
        10_000,
        'the first 100 lines (else the log was not streamed)',
      );
      assert.deepEqual(
        lines,
        Array.from({ length: 100 }, (_, i) => `line ${String(i + 1).padStart(5, '0')}`),
      );
    } finally {
      abort.abort();
      proxy.release();
    }
  });

  it('ends at limitBytes and closes the engine’s answer, not read to its end', async () => {
    const before = proxy.closedEarly;
    const read = (async () => readAll(await viaProxy.containerLogs(pod, 'main', { limitBytes: 100 })))();
    const text = await within(read, 10_000, 'the first 100 bytes (else the log was not streamed)');
    assert.equal(text.length, 100);
    assert.equal(
      text,
      Array.from({ length: 10 }, (_, i) => `line ${String(i + 1).padStart(5, '0')}\n`)
        .join('')
        .slice(0, 100),
    );
    await waitFor(async () => proxy.closedEarly > before, {
      timeoutMs: 10_000,
      what: 'the engine connection closed with at most 16 KiB of the log read',
    });
    proxy.release();
  });
});

/** What `read` resolves to, or a failure naming `what` once `timeoutMs` passed without it. */
async function within<T>(read: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([read, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
