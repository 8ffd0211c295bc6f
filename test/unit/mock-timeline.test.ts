import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MockRun } from '../../lib/provider/mock/mock-command.ts';
import { type MockPodState, mockPodStatus } from '../../lib/provider/mock/mock-pod-status.ts';
import { restartBackoffMs } from '../../lib/provider/mock/mock-timeline.ts';

const createdAt = Date.parse('2026-03-01T10:00:00.000Z');
const at = (s: number) => createdAt + s * 1000;
const HOST = '172.20.0.7';
const exits = (seconds: number, exitCode: number): MockRun => ({ seconds, exitCode, ignoresTerm: false });

function pod(over: Partial<MockPodState> = {}): MockPodState {
  return {
    namespace: 'ns',
    name: 'p',
    uid: 'uid-1',
    node: 'vk',
    restartPolicy: 'Always',
    containers: [{ name: 'app', image: 'busybox', run: exits(0, 1) }],
    plan: { startDelaySeconds: 0, exitCode: 0 },
    createdAt,
    ...over,
  };
}

describe('mock container timelines', () => {
  it('backs off at once, then 10 s doubling to 5 minutes', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 7, 8, 20].map(restartBackoffMs),
      [0, 10_000, 20_000, 40_000, 300_000, 300_000, 300_000],
    );
  });

  it('crash-loops a failing container under Always: CrashLoopBackOff, a growing restartCount, phase Running', () => {
    const early = mockPodStatus(pod(), at(5), HOST);
    const c = early.containerStatuses?.[0];
    assert.equal(early.phase, 'Running');
    assert.equal(c?.restartCount, 1);
    assert.equal(c?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(c?.lastState?.terminated?.exitCode, 1);
    assert.equal(c?.ready, false);
    // Restarts at 0 (at once), 10 s, then 30 s (20 s back-off), then 70 s.
    assert.deepEqual(
      [9, 11, 29, 31, 69, 71].map(
        (s) => mockPodStatus(pod(), at(s), HOST).containerStatuses?.[0]?.restartCount,
      ),
      [1, 2, 2, 3, 3, 4],
    );
  });

  it('restarts under OnFailure only after a failure, and ends Succeeded after a success', () => {
    const fails = mockPodStatus(pod({ restartPolicy: 'OnFailure' }), at(15), HOST);
    assert.equal(fails.phase, 'Running');
    assert.equal(fails.containerStatuses?.[0]?.restartCount, 2);
    const done = mockPodStatus(
      pod({ restartPolicy: 'OnFailure', containers: [{ name: 'app', image: 'b', run: exits(2, 0) }] }),
      at(15),
      HOST,
    );
    assert.equal(done.phase, 'Succeeded');
    assert.equal(done.containerStatuses?.[0]?.restartCount, 0);
  });

  it('under Never ends Failed with the exit code, and never restarts', () => {
    const status = mockPodStatus(
      pod({ restartPolicy: 'Never', containers: [{ name: 'app', image: 'b', run: exits(1, 3) }] }),
      at(60),
      HOST,
    );
    assert.equal(status.phase, 'Failed');
    assert.equal(status.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);
    assert.equal(status.containerStatuses?.[0]?.state?.terminated?.reason, 'Error');
    assert.equal(status.containerStatuses?.[0]?.restartCount, 0);
  });

  it('runs init containers in order, each to exit 0, before the app containers', () => {
    const state = pod({
      initContainers: [
        { name: 'one', image: 'b', run: exits(2, 0) },
        { name: 'two', image: 'b', run: exits(3, 0) },
      ],
      containers: [{ name: 'app', image: 'b', run: exits(3600, 0) }],
    });
    const first = mockPodStatus(state, at(1), HOST);
    assert.equal(first.phase, 'Pending');
    assert.equal(first.conditions?.find((c) => c.type === 'Initialized')?.status, 'False');
    assert.deepEqual(
      first.initContainerStatuses?.map((c) => Object.keys(c.state ?? {})[0]),
      ['running', 'waiting'],
    );
    assert.equal(first.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
    const second = mockPodStatus(state, at(4), HOST);
    assert.deepEqual(
      second.initContainerStatuses?.map((c) => Object.keys(c.state ?? {})[0]),
      ['terminated', 'running'],
    );
    const running = mockPodStatus(state, at(6), HOST);
    assert.equal(running.phase, 'Running');
    assert.equal(running.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
    const [one, two] = running.initContainerStatuses ?? [];
    assert.deepEqual(one?.state?.terminated?.finishedAt, new Date(at(2)));
    assert.deepEqual(two?.state?.terminated?.startedAt, new Date(at(2)));
    assert.deepEqual(two?.state?.terminated?.finishedAt, new Date(at(5)));
    assert.deepEqual(running.containerStatuses?.[0]?.state?.running?.startedAt, new Date(at(5)));
    assert.ok(one?.ready && two?.ready, 'completed init containers are ready');
  });

  it('fails the pod when an init container fails under Never; the app containers never start', () => {
    const state = pod({
      restartPolicy: 'Never',
      initContainers: [{ name: 'check', image: 'b', run: exits(0, 1) }],
      containers: [{ name: 'app', image: 'b', run: exits(3600, 0) }],
    });
    const status = mockPodStatus(state, at(30), HOST);
    assert.equal(status.phase, 'Failed');
    assert.equal(status.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    assert.deepEqual(status.containerStatuses?.[0]?.state, { waiting: { reason: 'PodInitializing' } });
  });

  it('restarts a failing init container with back-off under Always, the pod Pending', () => {
    const state = pod({
      initContainers: [{ name: 'check', image: 'b', run: exits(0, 1) }],
      containers: [{ name: 'app', image: 'b', run: exits(3600, 0) }],
    });
    const status = mockPodStatus(state, at(15), HOST);
    assert.equal(status.phase, 'Pending');
    assert.equal(status.initContainerStatuses?.[0]?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(status.initContainerStatuses?.[0]?.restartCount, 2);
  });

  it('gives the same status at every moment between two changes, so a poller writes once per change', () => {
    assert.deepEqual(mockPodStatus(pod(), at(11), HOST), mockPodStatus(pod(), at(29), HOST));
  });
});
