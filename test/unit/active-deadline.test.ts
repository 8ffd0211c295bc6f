import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  DEADLINE_KILLED_MARK,
  DEADLINE_MARK,
  deadlineExceededStatus,
  decideDeadline,
  failedByDeadline,
  pastActiveDeadline,
  podToKill,
} from '../../lib/pod/status/active-deadline.ts';
import { FakeClock } from '../support/fake-clock.ts';

const START = new Date('2026-01-01T00:00:00Z');

function runningPod(activeDeadlineSeconds: number | undefined, startTime: Date | null = START): V1Pod {
  return {
    metadata: { namespace: 'ns', name: 'job-1', uid: 'u1' },
    spec: {
      containers: [{ name: 'main' }, { name: 'done' }],
      ...(activeDeadlineSeconds !== undefined ? { activeDeadlineSeconds } : {}),
      terminationGracePeriodSeconds: 7,
    },
    status: {
      phase: 'Running',
      ...(startTime ? { startTime } : {}),
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'PodScheduled', status: 'True' },
      ],
      containerStatuses: [
        {
          name: 'main',
          image: 'busybox',
          imageID: '',
          ready: true,
          restartCount: 0,
          started: true,
          containerID: 'docker://abc',
          state: { running: { startedAt: new Date('2026-01-01T00:00:01Z') } },
        },
        {
          name: 'done',
          image: 'busybox',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 0, reason: 'Completed' } },
        },
      ],
    },
  };
}

describe('activeDeadlineSeconds (the kubelet active_deadline.go)', () => {
  it('is past once now - startTime reaches the deadline, by the injected clock', () => {
    const clock = new FakeClock({ wall: START.getTime() });
    assert.equal(pastActiveDeadline(5, START, clock.now()), false);
    clock.advance(4_999);
    assert.equal(pastActiveDeadline(5, START, clock.now()), false);
    clock.advance(1);
    assert.equal(
      pastActiveDeadline(5, START, clock.now()),
      true,
      'at exactly the deadline (>=, as the kubelet)',
    );
    assert.equal(pastActiveDeadline(5, START.toISOString(), clock.now()), true, 'a start time as JSON');
    assert.equal(pastActiveDeadline(undefined, START, clock.now()), false, 'no deadline');
    assert.equal(pastActiveDeadline(5, undefined, clock.now()), false, 'not started: no start time');
  });

  it('decides per known pod: fail once past, then kill until the provider lets go, then nothing', () => {
    const clock = new FakeClock({ wall: START.getTime() });
    const reported = runningPod(undefined).status;
    const record = { activeDeadlineSeconds: 10, statusHash: 'h1' };
    assert.equal(decideDeadline(record, reported, clock.now()), 'none');
    clock.advance(10_000);
    assert.equal(decideDeadline(record, reported, clock.now()), 'fail');
    assert.equal(decideDeadline({ statusHash: 'h1' }, reported, clock.now()), 'none', 'no deadline applied');
    assert.equal(decideDeadline(record, undefined, clock.now()), 'none', 'the provider does not have it');
    assert.equal(
      decideDeadline(record, { ...reported, phase: 'Succeeded' }, clock.now()),
      'none',
      'a finished pod is left alone',
    );
    assert.equal(
      decideDeadline({ ...record, forceDeleteAt: '2026-01-01T00:01:00.000Z' }, reported, clock.now()),
      'none',
      'a pod being deleted is left to the delete',
    );
    assert.equal(decideDeadline({ ...record, statusHash: DEADLINE_MARK }, reported, clock.now()), 'kill');
    assert.equal(decideDeadline({ ...record, statusHash: DEADLINE_MARK }, undefined, clock.now()), 'done');
    assert.equal(
      decideDeadline({ ...record, statusHash: DEADLINE_KILLED_MARK }, reported, clock.now()),
      'done',
    );
  });

  it('writes Failed/DeadlineExceeded, running containers terminated, Ready false; other conditions kept', () => {
    const clock = new FakeClock({ wall: START.getTime() + 30_500 });
    const pod = runningPod(30);
    const status = deadlineExceededStatus(pod, clock.now());
    assert.ok(status);
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'DeadlineExceeded');
    assert.equal(status.message, 'Pod was active on the node longer than the specified deadline');
    assert.deepEqual(status.startTime, START);
    const [main, done] = status.containerStatuses ?? [];
    assert.deepEqual(main?.state, {
      terminated: {
        exitCode: 137,
        reason: 'DeadlineExceeded',
        message: 'Pod was active on the node longer than the specified deadline',
        finishedAt: new Date('2026-01-01T00:00:30Z'),
        startedAt: new Date('2026-01-01T00:00:01Z'),
        containerID: 'docker://abc',
      },
    });
    assert.equal(main?.ready, false);
    assert.deepEqual(done, pod.status?.containerStatuses?.[1], 'a container that had ended keeps its record');
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status]),
      [
        ['Ready', 'False'],
        ['PodScheduled', 'True'],
      ],
    );
    assert.equal(failedByDeadline({ ...pod, status }), true);
  });

  it('writes nothing over a finished pod, or one the API server says is not past (its deadline, its start)', () => {
    const now = START.getTime() + 60_000;
    assert.equal(
      deadlineExceededStatus({ ...runningPod(30), status: { phase: 'Succeeded' } }, now),
      undefined,
    );
    assert.equal(deadlineExceededStatus(runningPod(120), now), undefined, 'a longer deadline');
    assert.equal(deadlineExceededStatus(runningPod(undefined), now), undefined, 'no deadline any more');
    assert.equal(deadlineExceededStatus(runningPod(30, null), now), undefined, 'no start time');
    assert.ok(deadlineExceededStatus(runningPod(30, null), now, START), "the provider's start time instead");
  });

  it("kills with the pod's grace period from now, as a graceful delete", () => {
    const clock = new FakeClock({ wall: START.getTime() + 5_000 });
    const pod = runningPod(5);
    const kill = podToKill(pod, clock.now());
    assert.deepEqual(kill.metadata?.deletionTimestamp, new Date('2026-01-01T00:00:12Z'));
    assert.equal(kill.metadata?.deletionGracePeriodSeconds, 7);
    assert.equal(kill.metadata?.uid, 'u1');
    assert.equal(pod.metadata?.deletionTimestamp, undefined, 'the pod itself is left alone');
  });
});
