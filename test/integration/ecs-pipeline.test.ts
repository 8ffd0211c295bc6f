import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TaskStateResult } from '../../lib/app/ecs-task-state-entry.ts';
import { shell } from '../harness/harness-pods.ts';
import { PipelineHarness } from '../harness/pipeline-harness.ts';
import { ecsProviderSetup } from '../harness/providers/ecs.ts';
import { testEnv } from '../support/env.ts';

/**
 * The push, proven alone through the real pipeline (real kube-apiserver,
 * scheduler and controller-manager, DynamoDB Local, the functions in the
 * local Lambda runtime) over the AWS simulation: pod-status does not run
 * and DescribeTasks is never due, so the only way a pod can become Running
 * in the API server is an "ECS Task State Change" event reaching
 * ecs-task-state, which writes the status at once.
 */

const setup = ecsProviderSetup({ env: { SVK_ECS_STATUS_POLL_SECONDS: '3600' } });
const taskState: TaskStateResult[] = [];
let harness: PipelineHarness;

before(async () => {
  harness = await PipelineHarness.start({
    environment: testEnv(),
    provider: setup,
    scheduled: ['heartbeat', 'pod-watch'],
    onResult: (invocation, result) => {
      if (invocation.functionName === 'ecs-task-state' && result.status === 'ok') {
        const value = result.result;
        if (typeof value === 'object' && value !== null && 'outcome' in value)
          taskState.push(value as TaskStateResult);
      }
    },
  });
});

after(async () => {
  await harness?.stop();
  assert.deepEqual(setup.aws.violations, [], 'every request fits the published API model');
});

describe('ECS provider through the pipeline: pushed task-state events', () => {
  it('a pushed Task State Change event makes the pod Running, without any poll', {
    timeout: 180_000,
  }, async () => {
    const ns = await harness.namespace('push');
    await harness.pods.create(ns, {
      metadata: { name: 'pushed' },
      spec: harness.pods.spec({ containers: [shell('main', 'sleep 3600')] }),
    });
    const running = await harness.pods.waitFor(ns, 'pushed', (p) => p.status?.phase === 'Running', {
      timeoutMs: 120_000,
      what: 'pod pushed Running',
    });
    const uid = running.metadata?.uid ?? '';
    const [task] = setup.aws.ecs.tasksOf(uid);
    assert.ok(task, 'its task');
    assert.equal(running.status?.podIP, task.podIp, "the task ENI's address");
    assert.equal(setup.aws.ecs.calls.DescribeTasks ?? 0, 0, 'no DescribeTasks: nothing polled ECS');
    const written = taskState.filter((r) => r.uid === uid && r.status === 'written');
    assert.ok(written.length > 0, 'ecs-task-state wrote the status');
    assert.ok(
      taskState.some((r) => r.uid === uid && r.outcome === 'stale'),
      'a duplicated or late event changed nothing',
    );
    assert.equal(setup.aws.ecs.tasksOf(uid).length, 1);
  });
});
