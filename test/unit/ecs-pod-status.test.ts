import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideEcsPod, restartPlan } from '../../lib/provider/ecs/ecs-pod-progress.ts';
import type { EcsPodRecord, TaskRecord } from '../../lib/provider/ecs/ecs-pod-record.ts';
import { ecsPodStatus } from '../../lib/provider/ecs/ecs-pod-status.ts';
import type { ContainerSnapshot, TaskSnapshot } from '../../lib/provider/ecs/task-snapshot.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const ARN = 'arn:aws:ecs:eu-west-1:123456789012:task/pods/aaa';

function record(over: Partial<EcsPodRecord> = {}): EcsPodRecord {
  return {
    namespace: 'shop',
    name: 'web',
    uid: 'uid-1',
    node: 'vk-1',
    restartPolicy: 'Always',
    initContainers: [],
    containers: [{ name: 'app', image: 'nginx:1.27' }],
    gracePeriodSeconds: 30,
    family: 'svk-x',
    taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/svk-x:1',
    run: { containerOverrides: [] },
    secretParameters: [],
    createdAt: T0,
    restarts: 0,
    current: { seq: 0, requestedAt: T0 },
    observedAt: T0,
    creates: 1,
    deletes: 0,
    version: 1,
    ...over,
  };
}

function task(
  lastStatus: string,
  containers: ContainerSnapshot[],
  over: Partial<TaskSnapshot> = {},
): TaskRecord {
  return {
    seq: 0,
    requestedAt: T0,
    arn: ARN,
    snapshot: {
      arn: ARN,
      version: 5,
      lastStatus,
      desiredStatus: lastStatus === 'STOPPED' ? 'STOPPED' : 'RUNNING',
      podIp: '10.0.0.7',
      containers,
      ...over,
    },
  };
}

const stopped = (
  name: string,
  exitCode: number | undefined,
  at: number,
  reason?: string,
): ContainerSnapshot => ({
  name,
  lastStatus: 'STOPPED',
  ...(exitCode !== undefined ? { exitCode } : {}),
  ...(reason ? { reason } : {}),
  startedAt: at - 1000,
  finishedAt: at,
});

describe("ECS pod status (the kubelet's view of a task)", () => {
  it('just requested: Pending, ContainerCreating, no IP', () => {
    const s = ecsPodStatus(record());
    assert.equal(s.phase, 'Pending');
    assert.equal(s.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    assert.equal(s.podIP, undefined);
  });

  it('init containers in order, then the app: Initialized once both exited 0, Running and Ready', () => {
    const r = record({
      initContainers: [
        { name: 'first', image: 'b' },
        { name: 'second', image: 'b' },
      ],
      current: task(
        'RUNNING',
        [
          stopped('first', 0, T0 + 2000),
          stopped('second', 0, T0 + 4000),
          { name: 'app', lastStatus: 'RUNNING', startedAt: T0 + 4000 },
        ],
        { startedAt: T0 + 1000 },
      ),
    });
    const s = ecsPodStatus(r);
    assert.equal(s.phase, 'Running');
    assert.deepEqual(
      s.initContainerStatuses?.map((c) => [
        c.state?.terminated?.reason,
        c.state?.terminated?.finishedAt?.toISOString(),
      ]),
      [
        ['Completed', '2026-03-01T10:00:02.000Z'],
        ['Completed', '2026-03-01T10:00:04.000Z'],
      ],
    );
    assert.equal(
      s.containerStatuses?.[0]?.state?.running?.startedAt?.toISOString(),
      '2026-03-01T10:00:04.000Z',
    );
    assert.deepEqual(
      s.conditions?.map((c) => [c.type, c.status]),
      [
        ['PodScheduled', 'True'],
        ['Initialized', 'True'],
        ['ContainersReady', 'True'],
        ['Ready', 'True'],
      ],
    );
    assert.equal(s.podIP, '10.0.0.7');
    assert.deepEqual(ecsPodStatus(r), s, 'pure: the same record gives the same status');
  });

  it('an init container that fails under Never: Failed, the app never started (PodInitializing)', () => {
    const r = record({
      restartPolicy: 'Never',
      initContainers: [{ name: 'check', image: 'b' }],
      current: task(
        'STOPPED',
        [
          stopped('check', 1, T0 + 2000),
          {
            name: 'app',
            lastStatus: 'STOPPED',
            exitCode: 143,
            reason:
              'CannotStartContainerError: dependency graph: failed to resolve container ordering dependency',
          },
        ],
        { stoppedAt: T0 + 3000 },
      ),
    });
    const s = ecsPodStatus(r);
    assert.equal(s.phase, 'Failed');
    assert.equal(s.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    assert.deepEqual(s.containerStatuses?.[0]?.state, { waiting: { reason: 'PodInitializing' } });
    assert.equal(decideEcsPod(r, T0 + 60_000, 60_000).kind, 'none', 'no restart under Never');
  });

  it('exit codes under OnFailure: 0 ends Succeeded, 1 restarts after the back-off', () => {
    const ok = record({
      restartPolicy: 'OnFailure',
      current: task('STOPPED', [stopped('app', 0, T0 + 5000)], { stoppedAt: T0 + 5000 }),
    });
    assert.equal(ecsPodStatus(ok).phase, 'Succeeded');
    assert.equal(restartPlan(ok), undefined);
    const failing = record({
      restartPolicy: 'OnFailure',
      current: task('STOPPED', [stopped('app', 1, T0 + 5000)], { stoppedAt: T0 + 5000 }),
    });
    assert.deepEqual(restartPlan(failing), { at: T0 + 5000, delayMs: 0 }, 'the first restart is at once');
    assert.deepEqual(decideEcsPod(failing, T0 + 5000, 60_000), { kind: 'restart', replace: false });
  });

  it('the kubelet back-off: 10 s, 20 s... shown as CrashLoopBackOff with the last exit', () => {
    const prev = task('STOPPED', [stopped('app', 1, T0 + 2000)], { stoppedAt: T0 + 2000 });
    const crashing = record({
      restarts: 2,
      previous: prev,
      current: {
        ...task('STOPPED', [stopped('app', 1, T0 + 30_000)], {
          stoppedAt: T0 + 30_000,
          startedAt: T0 + 29_000,
        }),
        seq: 2,
      },
    });
    assert.deepEqual(restartPlan(crashing), { at: T0 + 50_000, delayMs: 20_000 });
    assert.equal(decideEcsPod(crashing, T0 + 49_999, 60_000).kind, 'none');
    assert.equal(decideEcsPod(crashing, T0 + 50_000, 60_000).kind, 'restart');
    const s = ecsPodStatus(crashing);
    assert.equal(s.phase, 'Running');
    const app = s.containerStatuses?.[0];
    assert.equal(app?.restartCount, 2);
    assert.equal(app?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(app?.lastState?.terminated?.exitCode, 1);
    // A task that ran for ten minutes or more starts the count over.
    const longRun = record({
      restarts: 5,
      current: task('STOPPED', [stopped('app', 1, T0 + 700_000)], { startedAt: T0, stoppedAt: T0 + 700_000 }),
    });
    assert.equal(restartPlan(longRun)?.delayMs, 0);
  });

  it('failures ECS reports: an image that cannot be pulled, a container killed for memory, a launch that failed', () => {
    const pull = record({
      restartPolicy: 'Never',
      current: task(
        'STOPPED',
        [{ name: 'app', lastStatus: 'STOPPED', reason: 'CannotPullContainerError: not found' }],
        { stopCode: 'TaskFailedToStart', stoppedAt: T0 + 3000 },
      ),
    });
    assert.deepEqual(ecsPodStatus(pull).containerStatuses?.[0]?.state?.terminated?.reason, 'ErrImagePull');
    assert.equal(ecsPodStatus(pull).phase, 'Failed');
    const pullAgain = record({ current: pull.current });
    assert.equal(ecsPodStatus(pullAgain).containerStatuses?.[0]?.state?.waiting?.reason, 'ImagePullBackOff');
    const oom = record({
      restartPolicy: 'Never',
      current: task(
        'STOPPED',
        [stopped('app', 137, T0 + 3000, 'OutOfMemoryError: Container killed due to memory usage')],
        { stoppedAt: T0 + 3000 },
      ),
    });
    assert.equal(ecsPodStatus(oom).containerStatuses?.[0]?.state?.terminated?.reason, 'OOMKilled');
    const launch = record({
      restartPolicy: 'Never',
      current: {
        seq: 0,
        requestedAt: T0,
        launchFailure: 'ECS started no task: Capacity is unavailable at this time',
      },
    });
    assert.equal(ecsPodStatus(launch).phase, 'Failed');
    assert.equal(ecsPodStatus(launch).containerStatuses?.[0]?.state?.waiting?.reason, 'ProviderFailed');
  });

  it('decides the delete: stop a running task once, forget the pod when its task stopped', () => {
    const r = record({
      deleteRequestedAt: T0 + 1000,
      current: task('RUNNING', [{ name: 'app', lastStatus: 'RUNNING' }]),
    });
    assert.deepEqual(decideEcsPod(r, T0 + 1000, 60_000), { kind: 'stop', arn: ARN });
    const asked = record({
      ...r,
      current: task('STOPPING', [{ name: 'app', lastStatus: 'RUNNING' }], { desiredStatus: 'STOPPED' }),
    });
    assert.equal(decideEcsPod(asked, T0 + 2000, 60_000).kind, 'none');
    assert.equal(decideEcsPod(asked, T0 + 61_000, 60_000).kind, 'refresh', 'the poll, when no event came');
    const done = record({
      ...r,
      current: task('STOPPED', [stopped('app', 143, T0 + 5000)], { stoppedAt: T0 + 5000 }),
    });
    assert.equal(decideEcsPod(done, T0 + 6000, 60_000).kind, 'gone');
  });
});
