import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MOCK_EXIT_CODE_ANNOTATION,
  MOCK_FAIL_CREATE_ANNOTATION,
  MOCK_FINISH_AFTER_ANNOTATION,
  MOCK_START_DELAY_ANNOTATION,
  mockCreateIntent,
  mockPodPlan,
} from '../../lib/provider/mock/mock-pod-plan.ts';
import {
  type MockPodState,
  mockHostIp,
  mockPodIp,
  mockPodObject,
  mockPodStatus,
} from '../../lib/provider/mock/mock-pod-status.ts';

const createdAt = Date.parse('2026-03-01T10:00:00.400Z');
const HOST = '172.20.0.7';

function state(plan: Partial<MockPodState['plan']> = {}): MockPodState {
  return {
    namespace: 'team-a',
    name: 'web-0',
    uid: '5f0c7c1e-8d7f-4c1b-9a51-3b2f0e6f1a11',
    node: 'vk-1',
    restartPolicy: 'Never',
    containers: [
      { name: 'app', image: 'nginx:1.27' },
      { name: 'sidecar', image: 'busybox' },
    ],
    plan: { startDelaySeconds: 0, exitCode: 0, ...plan },
    createdAt,
  };
}

const at = (seconds: number) => createdAt + seconds * 1000;
const condition = (status: ReturnType<typeof mockPodStatus>, type: string) =>
  status.conditions?.find((c) => c.type === type);

describe('mock pod status', () => {
  it('runs at once: Running, ready, every container running with mock ids', () => {
    const status = mockPodStatus(state(), createdAt, HOST);
    assert.equal(status.phase, 'Running');
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status]),
      [
        ['PodScheduled', 'True'],
        ['Initialized', 'True'],
        ['ContainersReady', 'True'],
        ['Ready', 'True'],
      ],
    );
    // Whole seconds, as the API server stores them.
    assert.deepEqual(status.startTime, new Date('2026-03-01T10:00:00Z'));
    assert.equal(status.hostIP, HOST);
    assert.deepEqual(status.podIPs, [{ ip: status.podIP }]);
    assert.deepEqual(status.containerStatuses, [
      {
        name: 'app',
        image: 'nginx:1.27',
        imageID: 'mock://nginx:1.27',
        containerID: `mock://${state().uid}/app`,
        restartCount: 0,
        ready: true,
        started: true,
        state: { running: { startedAt: new Date('2026-03-01T10:00:00Z') } },
      },
      {
        name: 'sidecar',
        image: 'busybox',
        imageID: 'mock://busybox',
        containerID: `mock://${state().uid}/sidecar`,
        restartCount: 0,
        ready: true,
        started: true,
        state: { running: { startedAt: new Date('2026-03-01T10:00:00Z') } },
      },
    ]);
  });

  it('gives the same status at any later time while nothing changes, so a poller writes once', () => {
    assert.deepEqual(mockPodStatus(state(), at(1), HOST), mockPodStatus(state(), at(3600), HOST));
  });

  it('stays Running until deleted when no finish is planned', () => {
    assert.equal(mockPodStatus(state(), at(365 * 24 * 3600), HOST).phase, 'Running');
  });

  it('is Pending with containers in ContainerCreating during the start delay, then Running', () => {
    const slow = state({ startDelaySeconds: 5 });
    const pending = mockPodStatus(slow, at(4.9), HOST);
    assert.equal(pending.phase, 'Pending');
    assert.equal(condition(pending, 'Ready')?.status, 'False');
    assert.equal(condition(pending, 'Ready')?.reason, 'ContainersNotReady');
    assert.equal(condition(pending, 'Ready')?.message, 'containers with unready status: [app sidecar]');
    for (const c of pending.containerStatuses ?? []) {
      assert.deepEqual(c.state, { waiting: { reason: 'ContainerCreating' } });
      assert.equal(c.ready, false);
      assert.equal(c.containerID, undefined);
    }

    const running = mockPodStatus(slow, at(5), HOST);
    assert.equal(running.phase, 'Running');
    assert.deepEqual(condition(running, 'Ready')?.lastTransitionTime, new Date('2026-03-01T10:00:05Z'));
    assert.deepEqual(running.containerStatuses?.[0]?.state, {
      running: { startedAt: new Date('2026-03-01T10:00:05Z') },
    });
    assert.deepEqual(running.startTime, new Date('2026-03-01T10:00:00Z'), 'startTime is the create time');
  });

  it('does not go back to Pending when another invocation’s clock is behind the create time', () => {
    assert.equal(mockPodStatus(state(), createdAt - 2000, HOST).phase, 'Running');
  });

  it('finishes after N seconds from the start: Succeeded with exit code 0', () => {
    const job = state({ startDelaySeconds: 2, finishAfterSeconds: 3 });
    assert.equal(mockPodStatus(job, at(4.9), HOST).phase, 'Running');
    const done = mockPodStatus(job, at(5), HOST);
    assert.equal(done.phase, 'Succeeded');
    assert.equal(condition(done, 'Ready')?.reason, 'PodCompleted');
    assert.equal(condition(done, 'ContainersReady')?.status, 'False');
    for (const c of done.containerStatuses ?? []) {
      assert.equal(c.ready, false);
      assert.deepEqual(c.state?.terminated, {
        exitCode: 0,
        reason: 'Completed',
        startedAt: new Date('2026-03-01T10:00:02Z'),
        finishedAt: new Date('2026-03-01T10:00:05Z'),
        containerID: c.containerID,
      });
    }
  });

  it('finishes Failed with a non-zero exit code, and never restarts the containers', () => {
    const failing = { ...state({ finishAfterSeconds: 1, exitCode: 3 }), restartPolicy: 'Always' };
    const status = mockPodStatus(failing, at(60), HOST);
    assert.equal(status.phase, 'Failed');
    assert.deepEqual(
      status.containerStatuses?.map((c) => [
        c.state?.terminated?.exitCode,
        c.state?.terminated?.reason,
        c.restartCount,
      ]),
      [
        [3, 'Error', 0],
        [3, 'Error', 0],
      ],
    );
  });

  it('derives the pod IP from the uid and the default host IP from the node name', () => {
    const ip = mockPodIp('uid-1');
    assert.match(ip, /^10\.\d{1,3}\.\d{1,3}\.\d{1,3}$/);
    assert.equal(mockPodIp('uid-1'), ip);
    assert.notEqual(mockPodIp('uid-2'), ip);
    for (const part of ip.split('.')) assert.ok(Number(part) <= 255);
    assert.notEqual(ip.split('.')[3], '0');

    const host = mockHostIp('vk-1');
    assert.equal(mockHostIp('vk-1'), host);
    const [first, second] = host.split('.').map(Number);
    assert.equal(first, 172);
    assert.ok(second !== undefined && second >= 16 && second < 32, host);
  });

  it('returns the pod with its identity, binding, containers and status', () => {
    const pod = mockPodObject(state(), createdAt, HOST);
    assert.deepEqual(pod.metadata, { namespace: 'team-a', name: 'web-0', uid: state().uid });
    assert.deepEqual(pod.spec, {
      nodeName: 'vk-1',
      restartPolicy: 'Never',
      containers: [
        { name: 'app', image: 'nginx:1.27' },
        { name: 'sidecar', image: 'busybox' },
      ],
    });
    assert.equal(pod.status?.podIP, mockPodIp(state().uid));
  });
});

describe('mock pod annotations', () => {
  it('plans an immediate, endless run without annotations', () => {
    assert.deepEqual(mockCreateIntent(undefined), { plan: { startDelaySeconds: 0, exitCode: 0 } });
  });

  it('reads start delay, finish time and exit code, decimals allowed', () => {
    assert.deepEqual(
      mockPodPlan({
        [MOCK_START_DELAY_ANNOTATION]: '1.5',
        [MOCK_FINISH_AFTER_ANNOTATION]: '10',
        [MOCK_EXIT_CODE_ANNOTATION]: '137',
      }),
      { startDelaySeconds: 1.5, finishAfterSeconds: 10, exitCode: 137 },
    );
  });

  it('asks a create to fail with the annotation’s message', () => {
    assert.deepEqual(mockCreateIntent({ [MOCK_FAIL_CREATE_ANNOTATION]: 'no capacity in zone a' }), {
      fail: 'no capacity in zone a',
    });
    const empty = mockCreateIntent({ [MOCK_FAIL_CREATE_ANNOTATION]: '' });
    assert.ok('fail' in empty && empty.fail.includes(MOCK_FAIL_CREATE_ANNOTATION));
  });

  for (const [annotation, value] of [
    [MOCK_START_DELAY_ANNOTATION, 'soon'],
    [MOCK_START_DELAY_ANNOTATION, '-1'],
    [MOCK_START_DELAY_ANNOTATION, ''],
    [MOCK_FINISH_AFTER_ANNOTATION, '1e3'],
    [MOCK_FINISH_AFTER_ANNOTATION, 'Infinity'],
    [MOCK_FINISH_AFTER_ANNOTATION, '0x10'],
  ] as const) {
    it(`rejects ${annotation}=${JSON.stringify(value)}, naming the annotation`, () => {
      assert.throws(
        () => mockCreateIntent({ [annotation]: value }),
        (err: Error) => err.message.includes(annotation) && err.message.includes(JSON.stringify(value)),
      );
    });
  }

  for (const value of ['-1', '256', '1.5', 'x']) {
    it(`rejects exit code ${JSON.stringify(value)}`, () => {
      assert.throws(
        () => mockPodPlan({ [MOCK_FINISH_AFTER_ANNOTATION]: '1', [MOCK_EXIT_CODE_ANNOTATION]: value }),
        (err: Error) => err.message.includes(MOCK_EXIT_CODE_ANNOTATION),
      );
    });
  }

  it('rejects an exit code without a finish time', () => {
    assert.throws(
      () => mockPodPlan({ [MOCK_EXIT_CODE_ANNOTATION]: '1' }),
      (err: Error) =>
        err.message.includes(MOCK_EXIT_CODE_ANNOTATION) && err.message.includes(MOCK_FINISH_AFTER_ANNOTATION),
    );
  });
});
