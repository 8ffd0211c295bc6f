import assert from 'node:assert/strict';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import { waitFor } from '../../support/kube.ts';
import { containerStatus, isRunningAndReady, refOf } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;

/** A pod's life: it runs, it ends with its exit code, a Job completes, a crash-looping container backs off. */
export function lifecycleScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'create-running',
    'a pod and a Deployment run: Running, Ready, pod IP, each created once',
    4 * MINUTE,
    createRunning,
  );
  scenario(
    ctx,
    'exit-codes',
    'restartPolicy Never: exit 0 ends Succeeded, exit 3 ends Failed with exit code 3',
    3 * MINUTE,
    exitCodes,
  );
  scenario(ctx, 'job', "a Job whose container runs sh -c 'exit 0' completes", 3 * MINUTE, job);
  scenario(
    ctx,
    'crash-loop',
    'restartPolicy Always: a failing container is restarted with back-off (CrashLoopBackOff, growing restartCount)',
    4 * MINUTE,
    crashLoop,
  );
}

async function createRunning(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('create');
  await h.pods.create(ns, {
    metadata: { name: 'web' },
    spec: h.pods.spec({ containers: [shell('app', 'sleep 3600')] }),
  });
  const pod = await h.pods.waitFor(ns, 'web', isRunningAndReady, {
    timeoutMs: 2 * MINUTE,
    what: 'pod web Running and Ready',
  });
  const app = containerStatus(pod, 'app');
  assert.ok(app?.state?.running?.startedAt, 'the container runs, with its start time');
  assert.equal(app?.ready, true);
  assert.equal(app?.restartCount, 0);
  assert.ok(pod.status?.podIP, 'a pod IP');
  assert.ok(pod.status?.startTime, 'a start time');
  const history = await h.probe.history(refOf(pod));
  assert.deepEqual(
    history && { creates: history.creates, deletes: history.deletes, running: history.running },
    {
      creates: 1,
      deletes: 0,
      running: true,
    },
  );
  assert.ok(
    (await h.probe.pods(h.node)).some((p) => p.uid === pod.metadata?.uid),
    'listed by the provider on our node',
  );

  await h.pods.createDeployment(ns, {
    metadata: { name: 'hello' },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'hello' } },
      template: {
        metadata: { labels: { app: 'hello' } },
        spec: h.pods.spec({ containers: [shell('hello', 'echo hello; sleep 3600')] }),
      },
    },
  });
  await waitFor(
    async () =>
      (await h.apps.readNamespacedDeployment({ namespace: ns, name: 'hello' })).status?.availableReplicas ===
      3,
    { timeoutMs: 2 * MINUTE, intervalMs: 1_000, what: 'Deployment hello with 3 available replicas' },
  );
  const replicas = (await h.pods.list(ns)).filter((p) => p.metadata?.labels?.app === 'hello');
  assert.equal(replicas.length, 3);
  for (const replica of replicas) {
    assert.ok(isRunningAndReady(replica), `${replica.metadata?.name} Running and Ready`);
    assert.equal(
      (await h.probe.history(refOf(replica)))?.creates,
      1,
      `${replica.metadata?.name} created once`,
    );
  }
}

async function exitCodes(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('exit');
  const never = (script: string) =>
    h.pods.spec({ restartPolicy: 'Never', containers: [shell('main', script)] });
  await h.pods.create(ns, { metadata: { name: 'ok' }, spec: never('exit 0') });
  await h.pods.create(ns, { metadata: { name: 'three' }, spec: never('exit 3') });
  const [ok, three] = await Promise.all([
    h.pods.waitForPhase(ns, 'ok', 'Succeeded', 2 * MINUTE),
    h.pods.waitForPhase(ns, 'three', 'Failed', 2 * MINUTE),
  ]);
  const okEnd = containerStatus(ok, 'main')?.state?.terminated;
  assert.equal(okEnd?.exitCode, 0);
  assert.equal(okEnd?.reason, 'Completed');
  const threeEnd = containerStatus(three, 'main')?.state?.terminated;
  assert.equal(threeEnd?.exitCode, 3, 'exit code 3 in the pod status');
  assert.equal(threeEnd?.reason, 'Error');
  assert.equal(containerStatus(three, 'main')?.restartCount, 0, 'never restarted');
  for (const pod of [ok, three]) assert.equal((await h.probe.history(refOf(pod)))?.creates, 1);
}

async function job(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('job');
  await h.pods.createJob(ns, {
    metadata: { name: 'once' },
    spec: {
      backoffLimit: 0,
      template: {
        spec: h.pods.spec({ restartPolicy: 'Never', containers: [shell('main', 'exit 0')] }),
      },
    },
  });
  const done = await waitFor(
    async () => {
      const j = await h.batch.readNamespacedJob({ namespace: ns, name: 'once' });
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
    },
    { timeoutMs: 2 * MINUTE, intervalMs: 1_000, what: 'Job once Complete' },
  );
  assert.equal(done.status?.succeeded, 1);
  assert.equal(done.status?.failed ?? 0, 0);
  const [pod] = await h.pods.list(ns);
  assert.equal(pod?.status?.phase, 'Succeeded');
  assert.equal(pod && (await h.probe.history(refOf(pod)))?.creates, 1);
}

async function crashLoop(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('crash');
  await h.pods.create(ns, {
    metadata: { name: 'crashy' },
    spec: h.pods.spec({ containers: [shell('main', 'exit 1')] }),
  });
  const counts: number[] = [];
  let backOff: string | undefined;
  const pod = await h.pods.waitFor(
    ns,
    'crashy',
    (p) => {
      const c = containerStatus(p, 'main');
      if (c) counts.push(c.restartCount);
      if (c?.state?.waiting?.reason === 'CrashLoopBackOff') backOff = c.state.waiting.reason;
      return backOff !== undefined && (c?.restartCount ?? 0) >= 2;
    },
    { timeoutMs: 3 * MINUTE, what: 'CrashLoopBackOff seen and restartCount 2' },
  );
  assert.equal(backOff, 'CrashLoopBackOff');
  assert.deepEqual(
    counts,
    [...counts].sort((a, b) => a - b),
    `restartCount never goes down: ${counts.join(',')}`,
  );
  const main = containerStatus(pod, 'main');
  assert.equal(main?.lastState?.terminated?.exitCode, 1, 'the last run exited 1');
  assert.equal(pod.status?.phase, 'Running', 'a restarting pod under Always stays Running');
  assert.equal((await h.probe.history(refOf(pod)))?.creates, 1, 'restarts are not new creates');
}
