import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  containerStatus,
  shellContainer,
  shellPod,
  testDockerProvider,
  waitForPod,
} from '../support/docker.ts';
import { uniqueName } from '../support/kube.ts';

/**
 * Termination messages on a real engine, as the kubelet reports them and
 * as Kubernetes' Container Runtime blackbox specs (test/e2e/common/runtime.go)
 * check them: from the file at terminationMessagePath (as root and as
 * another user, at the default path and another), and with
 * FallbackToLogsOnError from the log of a container that failed.
 */
describe('docker provider: termination messages on a real engine', () => {
  const provider = testDockerProvider();
  const created: V1Pod[] = [];
  after(async () => {
    await Promise.all(created.map((p) => provider.deletePod(p).catch(() => undefined)));
  });

  async function finished(container: V1Container, phase: string, restartPolicy = 'Never'): Promise<V1Pod> {
    const pod = shellPod(uniqueName('term'), 'msg', {}, { restartPolicy });
    pod.spec = { ...pod.spec, containers: [{ ...container, name: 'main' }] };
    created.push(pod);
    await provider.createPod(pod);
    return waitForPod(provider, pod, (p) => p.status?.phase === phase, `pod ${phase}`);
  }

  const message = (pod: V1Pod) => containerStatus(pod, 'main')?.state?.terminated?.message ?? '';

  it('reports the file at the default path, written as root', async () => {
    const pod = await finished(
      {
        ...shellContainer('main', 'echo -n DONE > /dev/termination-log'),
        terminationMessagePath: '/dev/termination-log',
        securityContext: { runAsUser: 0 },
      },
      'Succeeded',
    );
    assert.equal(message(pod), 'DONE');
  });

  it('reports the file at another path, written by a user other than root', async () => {
    const pod = await finished(
      {
        ...shellContainer('main', 'echo -n DONE > /dev/termination-custom-log'),
        terminationMessagePath: '/dev/termination-custom-log',
        securityContext: { runAsUser: 10000 },
      },
      'Succeeded',
    );
    assert.equal(message(pod), 'DONE');
  });

  it('falls back to the log of a failed container with FallbackToLogsOnError', async () => {
    const pod = await finished(
      {
        ...shellContainer('main', 'echo -n DONE; false'),
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'FallbackToLogsOnError',
      },
      'Failed',
    );
    assert.equal(message(pod), 'DONE', 'the log as written: no newline after the last line');
  });

  it('reports nothing for a container that succeeded with FallbackToLogsOnError and an empty file', async () => {
    const pod = await finished(
      {
        ...shellContainer('main', 'echo -n DONE; true'),
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'FallbackToLogsOnError',
      },
      'Succeeded',
    );
    assert.equal(message(pod), '');
  });

  it('prefers the file to the log, and keeps at most the last 4 KiB of it and 2 KiB of the last 80 log lines', async () => {
    const fromFile = await finished(
      {
        ...shellContainer('main', 'echo -n OK > /dev/termination-log; echo DONE; true'),
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'FallbackToLogsOnError',
      },
      'Succeeded',
    );
    assert.equal(message(fromFile), 'OK');
    const long = await finished(
      {
        ...shellContainer(
          'main',
          'i=0; while [ $i -lt 600 ]; do echo -n 0123456789 >> /dev/termination-log; i=$((i+1)); done; echo -n END >> /dev/termination-log',
        ),
        terminationMessagePath: '/dev/termination-log',
      },
      'Succeeded',
    );
    assert.equal(Buffer.byteLength(message(long)), 4096);
    assert.ok(message(long).endsWith('END'), 'the end of the file');
    const logs = await finished(
      {
        ...shellContainer(
          'main',
          'i=0; while [ $i -lt 200 ]; do echo "line $i of the log"; i=$((i+1)); done; exit 2',
        ),
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'FallbackToLogsOnError',
      },
      'Failed',
    );
    const tail = message(logs);
    assert.ok(Buffer.byteLength(tail) <= 2048, `at most 2 KiB, not ${Buffer.byteLength(tail)}`);
    assert.ok(tail.endsWith('line 199 of the log\n'), 'the last line');
    assert.ok(!tail.includes('line 119 of'), 'only the last 80 lines');
  });

  it("keeps a restarted container's previous message in its last state", async () => {
    const pod = shellPod(uniqueName('term'), 'again', {}, { restartPolicy: 'Always' });
    pod.spec = {
      ...pod.spec,
      containers: [
        {
          ...shellContainer('main', 'echo -n "run $(date +%s%N)" > /dev/termination-log; exit 1'),
          terminationMessagePath: '/dev/termination-log',
        },
      ],
    };
    created.push(pod);
    await provider.createPod(pod);
    const restarted = await waitForPod(
      provider,
      pod,
      (p) =>
        (containerStatus(p, 'main')?.restartCount ?? 0) >= 1 &&
        !!containerStatus(p, 'main')?.lastState?.terminated,
      'a restart',
    );
    assert.match(containerStatus(restarted, 'main')?.lastState?.terminated?.message ?? '', /^run \d+/);
  });
});
