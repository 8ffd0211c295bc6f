import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { mockRun } from '../../lib/provider/mock/mock-command.ts';
import { type MockContainer, mockPodStatus } from '../../lib/provider/mock/mock-pod-status.ts';
import { mockProbeRun, mockProbes, mockReadyAt } from '../../lib/provider/mock/mock-probes.ts';

const T0 = Date.parse('2024-05-01T12:00:00Z');
const s = (seconds: number) => T0 + seconds * 1000;
const PREFIX = 'mock.serverless-virtual-kubelet.io/';

function container(over: Partial<V1Container>): V1Container {
  return { name: 'main', image: 'busybox', ...over };
}

function podAt(c: MockContainer, seconds: number, restartPolicy = 'Always') {
  return mockPodStatus(
    {
      namespace: 'ns',
      name: 'p',
      uid: 'u',
      node: 'vk',
      restartPolicy,
      containers: [c],
      plan: { startDelaySeconds: 0, exitCode: 0 },
      createdAt: T0,
    },
    s(seconds),
    '10.0.0.1',
  );
}

describe('mock probes and hooks', () => {
  it('turn ready once the readiness probe passes its threshold, after its initial delay', () => {
    const probes = mockProbes(
      container({
        readinessProbe: { exec: { command: ['true'] }, periodSeconds: 10, initialDelaySeconds: 5 },
      }),
      { [`${PREFIX}probe.main.readiness`]: 'pass-after=20' },
    );
    assert.ok(probes);
    const run = mockProbeRun(probes, T0);
    assert.deepEqual(mockReadyAt(run, s(19)), { ready: false });
    assert.deepEqual(mockReadyAt(run, s(21)), { ready: true, since: s(20) });
    const c: MockContainer = { name: 'main', image: 'busybox', probes };
    const status = podAt(c, 10);
    assert.equal(status.containerStatuses?.[0]?.ready, false);
    assert.equal(status.conditions?.find((x) => x.type === 'Ready')?.status, 'False');
    assert.equal(podAt(c, 25).conditions?.find((x) => x.type === 'Ready')?.status, 'True');
  });

  it('kill a container whose liveness probe fails, and restart it with back-off', () => {
    const probes = mockProbes(
      container({ livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 2 } }),
      { [`${PREFIX}probe.main.liveness`]: 'fail-after=4' },
    );
    assert.ok(probes);
    assert.deepEqual(mockProbeRun(probes, T0).kill, { at: s(5), reason: 'liveness' });
    const c: MockContainer = { name: 'main', image: 'busybox', probes };
    const after = podAt(c, 7).containerStatuses?.[0];
    assert.equal(after?.restartCount, 1, 'the first restart comes at once');
    assert.equal(after?.lastState?.terminated?.exitCode, 137);
    const backOff = podAt(c, 11).containerStatuses?.[0];
    assert.equal(backOff?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(podAt(c, 11, 'Never').phase, 'Failed', 'under Never it stays killed');
  });

  it('hold liveness until the startup probe passes, and report the container not started before', () => {
    const probes = mockProbes(
      container({
        startupProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 30 },
        livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 1 },
      }),
      { [`${PREFIX}probe.main.startup`]: 'pass-after=8', [`${PREFIX}probe.main.liveness`]: 'pass-after=8' },
    );
    assert.ok(probes);
    const run = mockProbeRun(probes, T0);
    assert.equal(run.kill, undefined, 'liveness never probed before the startup probe passed');
    assert.equal(run.startedAt, s(8));
    const c: MockContainer = { name: 'main', image: 'busybox', probes };
    assert.equal(podAt(c, 5).containerStatuses?.[0]?.started, false);
    assert.equal(podAt(c, 9).containerStatuses?.[0]?.started, true);
    const failing = mockProbes(
      container({ startupProbe: { exec: { command: ['true'] }, periodSeconds: 1, failureThreshold: 3 } }),
      { [`${PREFIX}probe.main.startup`]: 'fail' },
    );
    assert.ok(failing);
    assert.equal(mockProbeRun(failing, T0).kill?.reason, 'startup');
  });

  it('report a container waiting until its postStart hook returned', () => {
    const probes = mockProbes(container({ lifecycle: { postStart: { exec: { command: ['true'] } } } }), {
      [`${PREFIX}hook.main.post-start`]: 'seconds=3',
    });
    assert.ok(probes);
    const c: MockContainer = { name: 'main', image: 'busybox', probes };
    assert.equal(podAt(c, 2).containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    assert.ok(podAt(c, 4).containerStatuses?.[0]?.state?.running);
  });

  it('name a bad annotation', () => {
    assert.throws(
      () =>
        mockProbes(container({ readinessProbe: { exec: { command: ['true'] } } }), {
          [`${PREFIX}probe.main.readiness`]: 'sometimes',
        }),
      /annotation mock\.serverless-virtual-kubelet\.io\/probe\.main\.readiness: "sometimes" is not pass, fail/,
    );
  });

  it('take a termination message from what the script writes to the path, or its log when it failed', () => {
    const file = mockRun(
      ['sh', '-c'],
      ['echo -n DONE > /dev/termination-log'],
      {},
      {
        path: '/dev/termination-log',
        fallbackToLogs: false,
      },
    );
    assert.equal(file?.message, 'DONE');
    const logs = mockRun(
      ['sh', '-c'],
      ['echo -n DONE; false'],
      {},
      { path: '/dev/termination-log', fallbackToLogs: true },
    );
    const c: MockContainer = { name: 'main', image: 'busybox', ...(logs ? { run: logs } : {}) };
    const status = podAt(c, 1, 'Never');
    assert.equal(status.phase, 'Failed');
    assert.equal(status.containerStatuses?.[0]?.state?.terminated?.message, 'DONE');
  });
});
