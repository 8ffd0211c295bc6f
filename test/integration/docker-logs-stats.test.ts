import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
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
import { uniqueName, waitFor } from '../support/kube.ts';

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
