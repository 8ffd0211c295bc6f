import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import {
  condition,
  containerStatus,
  initContainerStatus,
  isRunningAndReady,
  ms,
  refOf,
} from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;

/** What a pod is made of: init containers, containers sharing a network, env from ConfigMaps, Secrets and the downward API. */
export function podShapeScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'init-containers',
    'init containers run in order and must succeed before the app containers start',
    4 * MINUTE,
    initContainers,
  );
  scenario(
    ctx,
    'init-containers-files',
    'init containers write a shared emptyDir in order; the app container reads it',
    3 * MINUTE,
    initContainerFiles,
  );
  scenario(ctx, 'localhost', 'two containers of a pod reach each other on localhost', 3 * MINUTE, localhost);
  scenario(
    ctx,
    'env',
    'env from a ConfigMap, a Secret (key and envFrom) and the downward API reaches the container',
    3 * MINUTE,
    env,
  );
}

async function initContainers(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('init');
  await h.pods.create(ns, {
    metadata: { name: 'ordered' },
    spec: h.pods.spec({
      initContainers: [shell('first', 'sleep 1'), shell('second', 'sleep 1')],
      containers: [shell('app', 'sleep 3600')],
    }),
  });
  await h.pods.create(ns, {
    metadata: { name: 'blocked' },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      initContainers: [shell('check', 'exit 1')],
      containers: [shell('app', 'sleep 3600')],
    }),
  });
  const [ordered, blocked] = await Promise.all([
    h.pods.waitFor(ns, 'ordered', isRunningAndReady, { timeoutMs: 3 * MINUTE, what: 'pod ordered Running' }),
    h.pods.waitForPhase(ns, 'blocked', 'Failed', 3 * MINUTE),
  ]);

  const first = initContainerStatus(ordered, 'first')?.state?.terminated;
  const second = initContainerStatus(ordered, 'second')?.state?.terminated;
  const app = containerStatus(ordered, 'app')?.state?.running;
  assert.deepEqual(
    [first?.exitCode, first?.reason, second?.exitCode, second?.reason],
    [0, 'Completed', 0, 'Completed'],
  );
  assert.equal(condition(ordered, 'Initialized'), 'True');
  assert.deepEqual(
    ['first', 'second'].map((c) => initContainerStatus(ordered, c)?.ready),
    [true, true],
    'an init container that exited 0 is ready, as the kubelet reports it',
  );
  // Times are whole seconds, so "no later than" is what order can show.
  assert.ok(ms(first?.finishedAt) <= ms(second?.startedAt), 'second started after first finished');
  assert.ok(ms(second?.finishedAt) <= ms(app?.startedAt), 'app started after second finished');

  assert.equal(initContainerStatus(blocked, 'check')?.state?.terminated?.exitCode, 1);
  assert.equal(initContainerStatus(blocked, 'check')?.ready, false, 'a failed init container is not ready');
  const blockedApp = containerStatus(blocked, 'app');
  assert.equal(blockedApp?.state?.running, undefined, 'the app container never ran');
  assert.equal(blockedApp?.state?.terminated?.startedAt, undefined, 'the app container never started');
  assert.equal(blockedApp?.restartCount ?? 0, 0);
}

async function initContainerFiles(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('init-files');
  const mount = [{ name: 'work', mountPath: '/work' }];
  await h.pods.create(ns, {
    metadata: { name: 'files' },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      volumes: [{ name: 'work', emptyDir: {} }],
      initContainers: [
        shell('first', 'printf 1 >> /work/order', { volumeMounts: mount }),
        shell('second', 'printf 2 >> /work/order', { volumeMounts: mount }),
      ],
      containers: [shell('app', 'test "$(cat /work/order)" = 12 || exit 3', { volumeMounts: mount })],
    }),
  });
  const done = await h.pods.waitFor(
    ns,
    'files',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs: 2 * MINUTE,
      what: 'pod files finished',
    },
  );
  assert.equal(
    containerStatus(done, 'app')?.state?.terminated?.exitCode,
    0,
    'the app read "12": both init containers ran, in order',
  );
  assert.equal(done.status?.phase, 'Succeeded');
}

async function localhost(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('localhost');
  const client = [
    'i=0',
    'while [ $i -lt 60 ]; do',
    '  if [ "$(busybox wget -q -O - http://127.0.0.1:8080/index.html)" = hello ]; then exit 0; fi',
    '  i=$((i+1)); sleep 1',
    'done',
    'exit 1',
  ].join('\n');
  await h.pods.create(ns, {
    metadata: { name: 'pair' },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      volumes: [{ name: 'www', emptyDir: {} }],
      containers: [
        shell('server', 'echo hello > /www/index.html && exec busybox httpd -f -p 127.0.0.1:8080 -h /www', {
          volumeMounts: [{ name: 'www', mountPath: '/www' }],
        }),
        // The client does not mount /www: only the network can bring it the page.
        shell('client', client),
      ],
    }),
  });
  const pod = await h.pods.waitFor(
    ns,
    'pair',
    (p) => containerStatus(p, 'client')?.state?.terminated !== undefined,
    {
      timeoutMs: 2 * MINUTE,
      what: 'the client container finished',
    },
  );
  assert.equal(
    containerStatus(pod, 'client')?.state?.terminated?.exitCode,
    0,
    'the client fetched the page from localhost',
  );
  assert.ok(containerStatus(pod, 'server')?.state?.running, 'the server still runs');
}

async function env(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('env');
  await h.admin.core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'settings' }, data: { color: 'blue', size: 'L' } },
  });
  await h.admin.core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'creds' }, stringData: { password: 's3cret' } },
  });
  const checks = (password: string) =>
    [
      [
        'test "$COLOR" = blue',
        `test "$PASSWORD" = ${password}`,
        'test "$CM_size" = L',
        'test "$POD_NAME" = "$EXPECTED_NAME"',
        `test "$POD_NAMESPACE" = ${ns}`,
        `test "$NODE" = ${h.node}`,
      ].join(' && '),
      'exit 3',
    ].join(' || ');
  const pod = (name: string, password: string): V1Pod => ({
    metadata: { name },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      containers: [
        shell('main', checks(password), {
          envFrom: [{ prefix: 'CM_', configMapRef: { name: 'settings' } }],
          env: [
            { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'settings', key: 'color' } } },
            { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
            { name: 'EXPECTED_NAME', value: name },
          ],
        }),
      ],
    }),
  });
  await h.pods.create(ns, pod('env-ok', 's3cret'));
  // The same checks expecting another password: proves the container really compares what it got.
  await h.pods.create(ns, pod('env-wrong', 'not-the-password'));
  const [ok, wrong] = await Promise.all([
    h.pods.waitFor(ns, 'env-ok', (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''), {
      timeoutMs: 2 * MINUTE,
      what: 'env-ok finished',
    }),
    h.pods.waitFor(ns, 'env-wrong', (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''), {
      timeoutMs: 2 * MINUTE,
      what: 'env-wrong finished',
    }),
  ]);
  assert.equal(containerStatus(ok, 'main')?.state?.terminated?.exitCode, 0, 'every value arrived');
  assert.equal(ok.status?.phase, 'Succeeded');
  assert.equal(containerStatus(wrong, 'main')?.state?.terminated?.exitCode, 3);
  assert.equal(wrong.status?.phase, 'Failed');
  assert.equal((await h.probe.history(refOf(ok)))?.creates, 1);
}
