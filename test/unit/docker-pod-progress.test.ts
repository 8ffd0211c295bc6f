import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { Instance, ObservedPod } from '../../lib/provider/docker/observed-pod.ts';
import { type PodPlan, podPlan } from '../../lib/provider/docker/pod-plan.ts';
import { podProgress } from '../../lib/provider/docker/pod-progress.ts';
import { type ImageView, podStatus } from '../../lib/provider/docker/pod-status.ts';
import { pullDelayMs, restartDelayMs } from '../../lib/provider/kubelet-backoff.ts';

const T0 = Date.parse('2026-03-01T10:00:00.300Z');
const at = (seconds: number) => T0 + seconds * 1000;

function plan(spec: Partial<NonNullable<V1Pod['spec']>> = {}): PodPlan {
  const pod: V1Pod = {
    metadata: { namespace: 'team-a', name: 'web-0', uid: 'uid-1' },
    spec: {
      nodeName: 'vk-1',
      containers: [{ name: 'app', image: 'busybox:1.36' }],
      ...spec,
    },
  };
  return podPlan(pod, { namespace: 'team-a', name: 'web-0', uid: 'uid-1', node: 'vk-1' }, 'cluster.local');
}

function observed(p: PodPlan, instances: Instance[]): ObservedPod {
  return {
    namespace: p.namespace,
    name: p.name,
    uid: p.uid,
    node: p.node,
    infra: {
      id: 'infra',
      role: 'infra',
      attempt: 0,
      state: 'running',
      createdAt: T0,
      startedAt: T0,
      plan: p,
      ip: '10.88.0.9',
    },
    instances,
  };
}

function exited(
  container: string,
  attempt: number,
  exitCode: number,
  startedS: number,
  finishedS: number,
  role: 'init' | 'app' = 'app',
): Instance {
  return {
    id: `${container}-${attempt}`,
    role,
    container,
    attempt,
    state: 'exited',
    createdAt: at(startedS),
    startedAt: at(startedS),
    finishedAt: at(finishedS),
    exitCode,
  };
}

function running(
  container: string,
  attempt: number,
  startedS: number,
  role: 'init' | 'app' = 'app',
): Instance {
  return {
    id: `${container}-${attempt}`,
    role,
    container,
    attempt,
    state: 'running',
    createdAt: at(startedS),
    startedAt: at(startedS),
  };
}

function status(p: PodPlan, instances: Instance[], nowS: number, images: Map<string, ImageView> = new Map()) {
  const pod = observed(p, instances);
  const progress = podProgress(pod, p, at(nowS));
  return {
    progress,
    status: podStatus({ pod, plan: p, progress, images, hostIp: '192.0.2.10', now: at(nowS) }),
  };
}

describe('docker provider back-off', () => {
  it('restarts the first exit at once, then waits 10 s doubling up to 5 min', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 10].map((a) => restartDelayMs(a, 1_000)),
      [0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000],
    );
  });

  it('starts the count over for an instance that stayed up for ten minutes', () => {
    assert.equal(restartDelayMs(6, 600_000), 0);
    assert.equal(restartDelayMs(6, 599_999), 300_000);
  });

  it('backs image pulls off from 10 s to 5 min', () => {
    assert.deepEqual([1, 2, 3, 9].map(pullDelayMs), [10_000, 20_000, 40_000, 300_000]);
  });
});

describe('docker provider progress and status', () => {
  it('creates the first init container only, then the next once it succeeded, then the app containers', () => {
    const p = plan({
      initContainers: [
        { name: 'one', image: 'busybox:1.36' },
        { name: 'two', image: 'busybox:1.36' },
      ],
    });
    const first = status(p, [], 0);
    assert.deepEqual(
      first.progress.initContainers.map((v) => v.step.kind),
      ['create', 'blocked'],
    );
    assert.equal(first.progress.containers[0]?.step.kind, 'blocked');
    assert.equal(first.status.phase, 'Pending');
    assert.equal(first.status.conditions?.find((c) => c.type === 'Initialized')?.status, 'False');

    const second = status(p, [exited('one', 0, 0, 1, 2, 'init')], 3);
    assert.deepEqual(
      second.progress.initContainers.map((v) => v.step.kind),
      ['done', 'create'],
    );
    const third = status(p, [exited('one', 0, 0, 1, 2, 'init'), exited('two', 0, 0, 3, 4, 'init')], 5);
    assert.equal(third.progress.initialized, true);
    assert.equal(third.progress.containers[0]?.step.kind, 'create');
    const initialized = third.status.conditions?.find((c) => c.type === 'Initialized');
    assert.equal(initialized?.status, 'True');
    assert.deepEqual(initialized?.lastTransitionTime, new Date(Math.floor(at(4) / 1000) * 1000));
  });

  it('fails the pod when an init container fails under Never, and retries it with back-off otherwise', () => {
    const spec = { initContainers: [{ name: 'setup', image: 'busybox:1.36' }] };
    const never = status(plan({ ...spec, restartPolicy: 'Never' }), [exited('setup', 0, 1, 1, 2, 'init')], 3);
    assert.equal(never.status.phase, 'Failed');
    assert.equal(never.progress.containers[0]?.step.kind, 'blocked');
    const always = status(
      plan({ ...spec, restartPolicy: 'Always' }),
      [exited('setup', 1, 1, 1, 2, 'init')],
      3,
    );
    assert.equal(always.progress.initContainers[0]?.step.kind, 'backoff');
    assert.equal(always.status.phase, 'Pending');
  });

  it('phases a pod from its containers and restartPolicy as the kubelet does', () => {
    const both = {
      containers: [
        { name: 'a', image: 'x:1' },
        { name: 'b', image: 'x:1' },
      ],
    };
    const cases: Array<[string, Instance[], string]> = [
      ['Never', [exited('a', 0, 0, 1, 2), exited('b', 0, 0, 1, 3)], 'Succeeded'],
      ['Never', [exited('a', 0, 0, 1, 2), exited('b', 0, 3, 1, 3)], 'Failed'],
      ['Never', [exited('a', 0, 0, 1, 2), running('b', 0, 1)], 'Running'],
      ['OnFailure', [exited('a', 0, 0, 1, 2), exited('b', 0, 0, 1, 3)], 'Succeeded'],
      ['Never', [running('a', 0, 1)], 'Pending'],
    ];
    for (const [restartPolicy, instances, phase] of cases) {
      assert.equal(
        status(plan({ ...both, restartPolicy }), instances, 30).status.phase,
        phase,
        `${restartPolicy} ${phase}`,
      );
    }
  });

  it('shows CrashLoopBackOff with the last termination while a restart backs off, and the restart once due', () => {
    const p = plan({ restartPolicy: 'Always' });
    const instances = [exited('app', 1, 1, 10, 11), exited('app', 0, 1, 1, 2)];
    const waiting = status(p, instances, 15);
    const app = waiting.status.containerStatuses?.[0];
    assert.equal(app?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.match(
      app?.state?.waiting?.message ?? '',
      /^back-off 10s restarting failed container=app pod=web-0_team-a\(uid-1\)$/,
    );
    assert.equal(app?.restartCount, 1);
    assert.equal(app?.lastState?.terminated?.exitCode, 1);
    assert.equal(waiting.status.phase, 'Running');
    const due = status(p, instances, 21);
    assert.deepEqual(due.progress.containers[0]?.step, { kind: 'create', attempt: 2, dueSince: at(11) });
    assert.deepEqual(
      due.progress.garbage.map((i) => i.id),
      ['app-0'],
      'the instance before the newest goes when a new one replaces it',
    );
  });

  it('says why a container waits for its image', () => {
    const p = plan();
    const reason = (view: ImageView, nowS: number) =>
      status(p, [], nowS, new Map([['app', view]])).status.containerStatuses?.[0]?.state?.waiting;
    assert.equal(reason({ kind: 'pulling' }, 1)?.reason, 'ContainerCreating');
    const failed: ImageView = {
      kind: 'failed',
      message: 'failed to pull image "x": denied',
      failedAt: at(1),
      retryAt: at(11),
    };
    assert.deepEqual(reason(failed, 2), {
      reason: 'ErrImagePull',
      message: 'failed to pull image "x": denied',
    });
    assert.deepEqual(reason(failed, 8), {
      reason: 'ImagePullBackOff',
      message: 'Back-off pulling image "busybox:1.36"',
    });
    assert.equal(reason({ kind: 'never' }, 1)?.reason, 'ErrImageNeverPull');
  });

  it('computes the same status from the same engine state, in whole seconds', () => {
    const p = plan({ restartPolicy: 'Always' });
    const instances = [running('app', 0, 1.7)];
    const a = status(p, instances, 5).status;
    const b = status(p, instances, 50).status;
    assert.deepEqual(a, b);
    assert.equal(a.podIP, '10.88.0.9');
    assert.equal(a.hostIP, '192.0.2.10');
    assert.deepEqual(
      a.containerStatuses?.[0]?.state?.running?.startedAt,
      new Date(Math.floor(at(1.7) / 1000) * 1000),
    );
    assert.equal(a.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  });
});
