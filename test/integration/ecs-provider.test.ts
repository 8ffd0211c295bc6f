import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isProviderNotFound } from '../../lib/provider/provider.ts';
import { ecsFixtures, ecsPod, statusOf } from '../support/ecs-sim/ecs-fixture.ts';
import { uniqueName } from '../support/kube.ts';

/**
 * The ECS Fargate provider against the AWS simulation (ECS, SSM and
 * CloudWatch Logs following their documented APIs, every request checked
 * against AWS's published model; the real SDK clients with only their
 * transport replaced) and DynamoDB Local. No ECS exists offline: what is
 * real here is the provider, the SDK and DynamoDB.
 */

const { fixture } = ecsFixtures();

describe('ECS provider: a pod is a task', () => {
  it('creates the task once, and pushed events alone make the pod Running (no DescribeTasks)', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'web', [{ name: 'app', script: 'sleep infinity' }]);
    const first = await f.provider.createPod(pod);
    assert.equal(first?.phase, 'Pending');
    assert.equal(statusOf({ status: first ?? {} }, 'app')?.state?.waiting?.reason, 'ContainerCreating');
    // A retried and a concurrent create of the same uid start nothing more.
    await Promise.all([f.provider.createPod(pod), f.provider.createPod(pod), f.provider.createPod(pod)]);
    const running = await f.until(async () => {
      const got = await f.provider.getPod(ns, 'web');
      return got?.status?.phase === 'Running' ? got : undefined;
    });
    assert.equal(f.aws.ecs.tasksOf(pod.metadata?.uid ?? '').length, 1, 'one task');
    assert.equal(f.aws.ecs.calls.DescribeTasks ?? 0, 0, 'no poll: the events carried the status');
    assert.equal(f.aws.ecs.calls.RegisterTaskDefinition, 1);
    assert.match(running.status?.podIP ?? '', /^10\.0\./);
    assert.ok(statusOf(running, 'app')?.state?.running?.startedAt);
    assert.ok(f.outcomes.some((o) => o.outcome === 'applied'));
  });

  it('runs a Job to Succeeded and a failing one to Failed with its exit code (restartPolicy Never)', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    await f.provider.createPod(
      ecsPod(ns, 'ok', [{ name: 'main', script: 'sleep 2; exit 0' }], { restartPolicy: 'Never' }),
    );
    await f.provider.createPod(
      ecsPod(ns, 'bad', [{ name: 'main', script: 'sleep 1; exit 3' }], { restartPolicy: 'Never' }),
    );
    const ok = await f.until(async () => {
      const p = await f.provider.getPod(ns, 'ok');
      return p?.status?.phase === 'Succeeded' ? p : undefined;
    });
    const bad = await f.until(async () => {
      const p = await f.provider.getPod(ns, 'bad');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(statusOf(ok, 'main')?.state?.terminated?.reason, 'Completed');
    assert.deepEqual(
      [statusOf(bad, 'main')?.state?.terminated?.exitCode, statusOf(bad, 'main')?.state?.terminated?.reason],
      [3, 'Error'],
    );
    assert.equal(statusOf(bad, 'main')?.restartCount, 0);
  });

  it('restarts a crashing pod as new tasks with the kubelet back-off, showing CrashLoopBackOff', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'crash', [{ name: 'main', script: 'sleep 1; exit 1' }]);
    await f.provider.createPod(pod);
    const backingOff = await f.until(async () => {
      const p = await f.provider.getPod(ns, 'crash');
      const s = statusOf(p, 'main');
      return s && s.restartCount >= 2 && s.state?.waiting?.reason === 'CrashLoopBackOff' ? p : undefined;
    });
    const main = statusOf(backingOff, 'main');
    assert.equal(main?.lastState?.terminated?.exitCode, 1);
    assert.match(main?.state?.waiting?.message ?? '', /back-off (10|20)s/);
    assert.equal(backingOff.status?.phase, 'Running');
    const tasks = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    assert.deepEqual(
      tasks.map((t) => t.group).slice(0, 3),
      [0, 1, 2].map((n) => `svk:${pod.metadata?.uid}:${n}`),
    );
    // The second restart waited for the first back-off (10 s) after the second task stopped.
    const [, second, third] = tasks;
    assert.ok(second?.stoppedAt !== undefined && third !== undefined);
    assert.ok(third.createdAt - second.stoppedAt >= 10_000, 'the kubelet back-off was kept');
  });

  it('deletes with StopTask: SIGKILL after the grace period for a process ignoring SIGTERM, then the pod is gone', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'stubborn', [{ name: 'main', script: "trap '' TERM; sleep infinity" }], {
      terminationGracePeriodSeconds: 20,
    });
    await f.provider.createPod(pod);
    await f.until(async () => (await f.provider.getPod(ns, 'stubborn'))?.status?.phase === 'Running');
    await f.pump(2_000);
    await f.provider.deletePod(pod);
    await f.provider.deletePod(pod);
    const [task] = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    assert.equal(task?.stoppedReason, `pod ${ns}/stubborn deleted in Kubernetes`);
    await f.pump(10_000);
    assert.ok(await f.provider.getPod(ns, 'stubborn'), 'still held while its task stops');
    await f.until(async () => (await f.provider.getPod(ns, 'stubborn')) === undefined);
    assert.equal(task?.containers[0]?.exitCode, 137);
    assert.ok((task?.stoppedAt ?? 0) - (task?.stoppingAt ?? 0) >= 20_000, 'stopTimeout = the grace period');
    await assert.rejects(f.provider.deletePod(pod), isProviderNotFound);
    assert.equal(f.aws.ecs.calls.StopTask, 1, 'the second delete found the stop asked already');
  });

  it('asks StopTask again when ECS does not show a task it just started (eventual consistency)', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'quick', [{ name: 'main', script: 'sleep infinity' }]);
    await f.provider.createPod(pod);
    await f.provider.deletePod(pod);
    const [task] = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    assert.equal(task?.desiredStatus, 'RUNNING', 'the first StopTask did not find the task yet');
    assert.ok(await f.provider.getPod(ns, 'quick'), 'not reported gone for it');
    await f.until(async () => (await f.provider.getPod(ns, 'quick')) === undefined);
    assert.equal(task?.stopCode, 'UserInitiated');
    assert.equal(task?.lastStatus, 'STOPPED');
  });

  it('an image change replaces the running task with one of the new shape (restartCount + 1)', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'upgrade', [{ name: 'app', image: 'shop/api:1', script: 'sleep infinity' }]);
    await f.provider.createPod(pod);
    await f.until(async () => (await f.provider.getPod(ns, 'upgrade'))?.status?.phase === 'Running');
    await f.pump(2_000);
    const changed = structuredClone(pod);
    const container = changed.spec?.containers[0];
    if (container) container.image = 'shop/api:2';
    await f.provider.updatePod(changed);
    const upgraded = await f.until(async () => {
      const p = await f.provider.getPod(ns, 'upgrade');
      return statusOf(p, 'app')?.restartCount === 1 && p?.status?.phase === 'Running' ? p : undefined;
    });
    assert.equal(statusOf(upgraded, 'app')?.image, 'shop/api:2');
    const tasks = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    assert.equal(tasks.length, 2);
    assert.equal(tasks[0]?.stoppedReason, `pod ${ns}/upgrade replaced: its spec changed`);
    assert.equal(f.aws.ecs.calls.RegisterTaskDefinition, 2);
    await assert.rejects(f.provider.updatePod(ecsPod(ns, 'nothing', [{ name: 'app' }])), isProviderNotFound);
  });
});
