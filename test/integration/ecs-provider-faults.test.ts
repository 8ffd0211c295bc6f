import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { isLaunchFailed } from '../../lib/provider/ecs/ecs-tasks.ts';
import { nodeStartedBy, podTags } from '../../lib/provider/ecs/run-task-input.ts';
import { mapSettledLimit } from '../../lib/util/map-limit.ts';
import {
  type EcsFixture,
  ecsFixtures,
  ecsPod,
  randomUUID,
  statusOf,
} from '../support/ecs-sim/ecs-fixture.ts';
import { uniqueName } from '../support/kube.ts';

/**
 * The ECS provider under what ECS documents it may do: lost answers and
 * retried RunTasks, ConflictException, failures[], throttling, MISSING
 * tasks, duplicated and reordered events, 100-task batches; Secret values
 * kept out of every request and record; one task definition for a burst of
 * replicas. Over the AWS simulation (real SDK clients, transport replaced)
 * and DynamoDB Local.
 */

const { fixture, table } = ecsFixtures();

const running = (f: EcsFixture, ns: string, name: string) =>
  f.until(async () => {
    const p = await f.provider.getPod(ns, name);
    return p?.status?.phase === 'Running' ? p : undefined;
  });

describe('ECS provider: creates exactly once', () => {
  it('a RunTask whose answer was lost is retried with the same clientToken: one task', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'lost', [{ name: 'app', script: 'sleep infinity' }]);
    // The SDK retries the 500 itself; the first two answers are lost, the third arrives.
    f.aws.ecs.loseAnswers('RunTask', 2);
    await f.provider.createPod(pod);
    assert.equal(f.aws.ecs.calls.RunTask, 3);
    assert.equal(f.aws.ecs.tasksOf(pod.metadata?.uid ?? '').length, 1);
    // Every answer lost: createPod fails, pod-sync retries it later: still one task.
    const pod2 = ecsPod(ns, 'lost-twice', [{ name: 'app', script: 'sleep infinity' }]);
    f.aws.ecs.loseAnswers('RunTask', 3);
    await assert.rejects(f.provider.createPod(pod2), (err: Error) => err.name === 'ServerException');
    await f.provider.createPod(pod2);
    assert.equal(f.aws.ecs.tasksOf(pod2.metadata?.uid ?? '').length, 1);
    await running(f, ns, 'lost-twice');
  });

  it('a clientToken already used with other parameters (ConflictException) finds the task it started', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'conflict', [{ name: 'app', script: 'sleep infinity' }]);
    const uid = pod.metadata?.uid ?? '';
    // An earlier attempt (other settings then) started the task and crashed before recording it.
    await f.provider.createPod(ecsPod(ns, 'warm', [{ name: 'app', script: 'sleep infinity' }]));
    const definition = f.aws.ecs.requests.find((r) => r.operation === 'RunTask')?.body.taskDefinition;
    const earlier = f.aws.answer(
      'AmazonEC2ContainerServiceV20141113.RunTask',
      JSON.stringify({
        cluster: 'pods',
        taskDefinition: definition,
        clientToken: uid,
        count: 1,
        startedBy: nodeStartedBy('svk-test', 'vk-1'),
        group: `svk:${uid}:0`,
        capacityProviderStrategy: [{ capacityProvider: 'FARGATE', weight: 1 }],
        networkConfiguration: {
          awsvpcConfiguration: { subnets: ['subnet-0aaaaaaaaaaaaaaaa'], assignPublicIp: 'DISABLED' },
        },
      }),
    );
    assert.equal(earlier.status, 200);
    await f.provider.createPod(pod);
    const tasks = f.aws.ecs.tasksOf(uid);
    assert.equal(tasks.length, 1, 'the task of the first attempt, not a second one');
    assert.equal((await f.parts.store.get(ns, 'conflict'))?.current.arn, tasks[0]?.arn);
    assert.ok(
      f.aws.ecs.requests.filter((r) => r.operation === 'RunTask' && r.body.clientToken === uid).length >= 2,
    );
  });

  it('RunTask with failures[] is a failed create naming the reason; the retried create starts the task', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'full', [{ name: 'app', script: 'sleep infinity' }]);
    f.aws.ecs.failNextRunTask(
      'Capacity is unavailable at this time. Please try again later or in a different availability zone',
    );
    await assert.rejects(f.provider.createPod(pod), (err: unknown) => {
      assert.ok(isLaunchFailed(err));
      assert.match(err.message, /Capacity is unavailable at this time/);
      return true;
    });
    const failed = await f.provider.getPod(ns, 'full');
    assert.equal(statusOf(failed, 'app')?.state?.waiting?.reason, 'ProviderFailed');
    await f.provider.createPod(pod);
    await running(f, ns, 'full');
    const [task] = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    assert.equal(task?.group, `svk:${pod.metadata?.uid}:1`, 'a new clientToken after a definite failure');
  });

  it('throttling: a short burst is retried by the SDK, a long one fails the call and the next look finishes', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    f.aws.ecs.throttle('RunTask', 2);
    const pod = ecsPod(ns, 'throttled', [{ name: 'app', script: 'sleep infinity' }]);
    await f.provider.createPod(pod);
    f.aws.ecs.throttle('RunTask', 3);
    const pod2 = ecsPod(ns, 'throttled-long', [{ name: 'app', script: 'sleep infinity' }]);
    await assert.rejects(f.provider.createPod(pod2), (err: Error) => err.name === 'ThrottlingException');
    assert.ok(await f.provider.getPod(ns, 'throttled-long'), 'the record is there');
    await running(f, ns, 'throttled-long');
    assert.equal(f.aws.ecs.tasksOf(pod2.metadata?.uid ?? '').length, 1);
  });

  it('one task definition for a burst of 60 replicas created 12 at a time', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pods = Array.from({ length: 60 }, (_, i) =>
      ecsPod(ns, `web-${i}`, [{ name: 'nginx', image: 'nginx:1.27' }]),
    );
    const results = await mapSettledLimit(pods, 12, (p) => f.provider.createPod(p));
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected'),
      [],
    );
    assert.equal(f.aws.ecs.calls.RegisterTaskDefinition, 1);
    assert.equal(f.aws.ecs.tasks.size, 60);
  });
});

describe('ECS provider: status from pushes and polls', () => {
  it('duplicated and reordered events leave the record at the newest state', async () => {
    const f = fixture();
    f.aws.ecs.events = { deliver: (e) => queue.push(e), duplicateEvery: 2, delayEvery: 3 };
    const queue: Array<Record<string, unknown>> = [];
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'chaos', [{ name: 'a', script: 'sleep 3; exit 0' }], { restartPolicy: 'Never' });
    await f.provider.createPod(pod);
    const { applyTaskStateEvent, parseTaskStateEvent } = await import(
      '../../lib/provider/ecs/task-state-event.ts'
    );
    const outcomes: string[] = [];
    for (let i = 0; i < 60; i++) {
      await f.clock.advance(100);
      f.aws.ecs.tick();
      while (queue.length > 0) {
        const e = queue.shift();
        if (e)
          outcomes.push((await applyTaskStateEvent(f.parts, parseTaskStateEvent(e), f.clock.now())).outcome);
      }
    }
    const [task] = f.aws.ecs.tasksOf(pod.metadata?.uid ?? '');
    const record = await f.parts.store.get(ns, 'chaos');
    assert.equal(task?.lastStatus, 'STOPPED');
    assert.equal(record?.current.snapshot?.version, task?.version, 'the newest version won');
    assert.equal(record?.current.snapshot?.lastStatus, 'STOPPED');
    assert.ok(outcomes.includes('stale'), 'duplicates and late events were seen and ignored');
    assert.equal(f.aws.ecs.calls.DescribeTasks ?? 0, 0);
    const done = await f.provider.getPod(ns, 'chaos');
    assert.equal(done?.status?.phase, 'Succeeded');
  });

  it('without events the poll (DescribeTasks, at most 100 a call) is the safety net; MISSING right after RunTask is not a loss', async () => {
    const f = fixture({ events: false, env: { SVK_ECS_STATUS_POLL_SECONDS: '5' } });
    const ns = uniqueName('ecs');
    const pods = Array.from({ length: 130 }, (_, i) =>
      ecsPod(ns, `p-${i}`, [{ name: 'app', script: 'sleep infinity' }]),
    );
    await mapSettledLimit(pods, 16, (p) => f.provider.createPod(p));
    // Due for a poll at once, before ECS shows the tasks: MISSING, kept Pending.
    await f.clock.advance(5_000 - 1_000 + 500);
    const early = await f.provider.listPods('vk-1');
    assert.ok(early.filter((p) => p.metadata?.namespace === ns).every((p) => p.status?.phase === 'Pending'));
    await f.until(
      async () => {
        const listed = (await f.provider.listPods('vk-1')).filter((p) => p.metadata?.namespace === ns);
        return listed.length === 130 && listed.every((p) => p.status?.phase === 'Running');
      },
      { stepMs: 1_000 },
    );
    const describes = f.aws.ecs.requests.filter((r) => r.operation === 'DescribeTasks');
    assert.ok(describes.length >= 2 && describes.every((r) => (r.body.tasks as string[]).length <= 100));
  });
});

describe('ECS provider: Secrets stay secret', () => {
  it('stores Secret values as SecureStrings named by content, shares them between replicas, deletes them after the last pod', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const secretEnv = [
      {
        name: 'PASSWORD',
        value: 'p4ss-w0rd-xyzzy',
        valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } },
      },
    ];
    const a = ecsPod(ns, 'a', [{ name: 'app', script: 'sleep 1', env: secretEnv }], {
      restartPolicy: 'Never',
    });
    const b = ecsPod(ns, 'b', [{ name: 'app', script: 'sleep 1', env: secretEnv }], {
      restartPolicy: 'Never',
    });
    await f.provider.createPod(a);
    await f.provider.createPod(b);
    const done = await f.until(async () => {
      const p = await f.provider.getPod(ns, 'a');
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(statusOf(done, 'app')?.state?.terminated?.exitCode, 0);
    const [task] = f.aws.ecs.tasksOf(a.metadata?.uid ?? '');
    assert.equal(
      task?.containers[0]?.env.PASSWORD,
      'p4ss-w0rd-xyzzy',
      'the container got the value, from SSM',
    );
    const parameters = [...f.aws.ssm.parameters.entries()].filter(([, p]) => p.value === 'p4ss-w0rd-xyzzy');
    assert.equal(parameters.length, 1, 'one parameter for both replicas');
    const [name, parameter] = parameters[0] ?? [];
    assert.equal(parameter?.type, 'SecureString');
    assert.match(name ?? '', new RegExp(`^/svk/test/pod-secrets/${ns}/creds/password/[0-9a-f]{32}$`));
    assert.equal(f.aws.ecs.calls.RegisterTaskDefinition, 1);
    const ecsRequests = JSON.stringify(f.aws.ecs.requests);
    assert.ok(!ecsRequests.includes('p4ss-w0rd-xyzzy'), 'no ECS request carries the value');
    const items = await table().doc.send(new ScanCommand({ TableName: table().tableName }));
    assert.ok(!JSON.stringify(items.Items).includes('p4ss-w0rd-xyzzy'), 'no DynamoDB item holds the value');
    await f.provider.deletePod(a);
    await f.until(async () => (await f.provider.getPod(ns, 'a')) === undefined);
    assert.ok(f.aws.ssm.parameters.has(name ?? ''), 'kept while b uses it');
    await f.provider.deletePod(b);
    await f.until(async () => (await f.provider.getPod(ns, 'b')) === undefined);
    assert.equal(f.aws.ssm.parameters.has(name ?? ''), false, 'deleted with its last user');
  });
});

describe('ECS provider: a crash between acquiring Secret parameters and writing the record leaks nothing', () => {
  const secretEnv = (value: string) => [
    { name: 'PASSWORD', value, valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
  ];
  const withValue = (f: EcsFixture, value: string) =>
    [...f.aws.ssm.parameters.values()].filter((p) => p.value === value).length;

  it('update: the new parameter is on the record before it exists, so the delete after the crash removes it', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const uid = randomUUID();
    const pod = (value: string) =>
      ecsPod(ns, 'rotated', [{ name: 'app', script: 'sleep infinity', env: secretEnv(value) }], {}, uid);
    await f.provider.createPod(pod('first-value-1111'));
    await running(f, ns, 'rotated');
    // The Secret changed: the update stores the new value, and dies as SSM creates it (every answer lost).
    f.aws.ssm.loseAnswers('PutParameter', 3);
    await assert.rejects(f.provider.updatePod(pod('second-value-2222')), /error occurred on the server side/);
    assert.equal(withValue(f, 'second-value-2222'), 1, 'the crash came after SSM created the parameter');
    // The pod is deleted before any retry of the update.
    await f.provider.deletePod(pod('second-value-2222'));
    await f.until(async () => (await f.provider.getPod(ns, 'rotated')) === undefined);
    assert.equal(withValue(f, 'first-value-1111'), 0, 'the old value deleted with the pod');
    assert.equal(withValue(f, 'second-value-2222'), 0, 'the new value deleted with the pod, not leaked');
  });

  it('resume: a retried create that crashes as it stores a changed value leaves it on the record', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const uid = randomUUID();
    const pod = (value: string) =>
      ecsPod(ns, 'resumed', [{ name: 'app', script: 'sleep infinity', env: secretEnv(value) }], {}, uid);
    // The first create wrote its record and RunTask started nothing: the retry resumes it.
    f.aws.ecs.failNextRunTask('RESOURCE:ENI');
    await assert.rejects(f.provider.createPod(pod('first-value-3333')), (err: Error) => isLaunchFailed(err));
    f.aws.ssm.loseAnswers('PutParameter', 3);
    await assert.rejects(f.provider.createPod(pod('second-value-4444')), /error occurred on the server side/);
    assert.equal(withValue(f, 'second-value-4444'), 1, 'the crash came after SSM created the parameter');
    await f.provider.deletePod(pod('second-value-4444'));
    await f.until(async () => (await f.provider.getPod(ns, 'resumed')) === undefined);
    assert.equal(withValue(f, 'first-value-3333'), 0);
    assert.equal(withValue(f, 'second-value-4444'), 0, 'the new value deleted with the pod, not leaked');
  });
});

describe('ECS provider: tasks without a record, logs, the node', () => {
  it('lists a task of our node that no record holds, and stops it when deleted (the dangling pass)', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    await f.provider.createPod(ecsPod(ns, 'known', [{ name: 'app', script: 'sleep infinity' }]));
    const definition = f.aws.ecs.requests.find((r) => r.operation === 'RunTask')?.body.taskDefinition;
    const uid = randomUUID();
    f.aws.answer(
      'AmazonEC2ContainerServiceV20141113.RunTask',
      JSON.stringify({
        cluster: 'pods',
        taskDefinition: definition,
        count: 1,
        startedBy: nodeStartedBy('svk-test', 'vk-1'),
        group: `svk:${uid}:0`,
        capacityProviderStrategy: [{ capacityProvider: 'FARGATE', weight: 1 }],
        tags: podTags({ uid, namespace: ns, name: 'ghost', node: 'vk-1' }),
        networkConfiguration: {
          awsvpcConfiguration: { subnets: ['subnet-0123456789abcdef0'], assignPublicIp: 'DISABLED' },
        },
      }),
    );
    await f.pump(2_000);
    const listed = await f.provider.listPods('vk-1');
    const ghost = listed.find((p) => p.metadata?.uid === uid);
    assert.equal(ghost?.metadata?.name, 'ghost');
    assert.equal(
      (await f.provider.listPods('vk-2')).some((p) => p.metadata?.uid === uid),
      false,
      'only its own node',
    );
    await f.provider.deletePod(ghost ?? {});
    const [task] = f.aws.ecs.tasksOf(uid);
    assert.equal(task?.desiredStatus, 'STOPPED');
  });

  it('reads container logs from CloudWatch Logs, with tail and timestamps', async () => {
    const f = fixture();
    const ns = uniqueName('ecs');
    const pod = ecsPod(ns, 'talk', [{ name: 'app', script: 'echo hello; echo world; sleep infinity' }]);
    await f.provider.createPod(pod);
    await running(f, ns, 'talk');
    const read = async (options: Parameters<NonNullable<typeof f.provider.containerLogs>>[2]) => {
      const chunks: Buffer[] = [];
      for await (const c of await f.provider.containerLogs(pod, 'app', options)) chunks.push(Buffer.from(c));
      return Buffer.concat(chunks).toString('utf8');
    };
    assert.equal(await read({}), 'hello\nworld\n');
    assert.equal(await read({ tailLines: 1 }), 'world\n');
    assert.match(
      await read({ timestamps: true, limitBytes: 40 }),
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z hello\n/,
    );
  });

  it('pings the node while the cluster is ACTIVE', async () => {
    const f = fixture();
    await f.parts.nodeProvider.ping('vk-1');
    f.aws.ecs.clusters.set('pods', 'INACTIVE');
    const other = fixture();
    other.aws.ecs.clusters.delete('pods');
    await assert.rejects(other.parts.nodeProvider.ping('vk-1'), /ECS cluster pods is not found, not ACTIVE/);
  });
});
