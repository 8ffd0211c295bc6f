import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { CoreV1Event, V1Pod, V1Volume } from '@kubernetes/client-node';
import { createDynamoDbClient } from '../../../lib/state/dynamodb-clients.ts';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import { testEnv } from '../../support/env.ts';
import { waitFor } from '../../support/kube.ts';
import { containerStatus } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;

/** ConfigMap, Secret, downwardAPI and projected volumes, subPath mounts, and a pod waiting for its ConfigMap. */
export function volumeScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'file-volumes',
    'ConfigMap (items, modes), Secret, downwardAPI and projected volumes and subPath mounts hold their files; the Secret is nowhere else',
    4 * MINUTE,
    fileVolumes,
  );
  scenario(
    ctx,
    'volume-update',
    "a changed ConfigMap and the pod's changed labels reach the mounted files, not a subPath mount",
    5 * MINUTE,
    volumeUpdate,
  );
  scenario(
    ctx,
    'volume-missing-source',
    'a missing mandatory ConfigMap keeps the pod Pending with FailedMount until it is created; a missing optional one does not',
    4 * MINUTE,
    missingSource,
  );
}

/** One shell line per check: the failing check's name in the log, exit 3. */
function checks(list: ReadonlyArray<[string, string]>): string {
  return [
    ...list.map(([name, test]) => `{ ${test}; } || { echo "FAILED: ${name}"; exit 3; }`),
    'echo ALL-OK > /tmp/termination-log',
  ].join('\n');
}

/** The file volumes both forms of the scenario mount (the sources of fileVolumeSources). */
const FILE_VOLUMES: V1Volume[] = [
  {
    name: 'cfg',
    configMap: {
      name: 'settings',
      defaultMode: 0o440,
      items: [
        { key: 'a', path: 'conf/a.txt', mode: 0o600 },
        { key: 'b', path: 'b-file' },
      ],
    },
  },
  { name: 'sec', secret: { secretName: 'creds', defaultMode: 0o400 } },
  {
    name: 'info',
    downwardAPI: {
      items: [
        { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
        { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
      ],
    },
  },
  {
    name: 'mix',
    projected: {
      sources: [
        { configMap: { name: 'settings', items: [{ key: 'b', path: 'b' }] } },
        { secret: { name: 'creds', items: [{ key: 'password', path: 'creds/pw' }] } },
        { downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  },
];

/** The scenario's namespace with its ConfigMap `settings` and Secret `creds` (a fresh password). */
async function fileVolumeSources(h: PipelineHarness): Promise<{ ns: string; password: string }> {
  const ns = await h.namespace('volumes');
  const password = `pw-${randomBytes(12).toString('hex')}`;
  await h.admin.core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'settings' }, data: { a: 'alpha', b: 'beta', 'c.txt': 'gamma' } },
  });
  await h.admin.core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'creds' }, stringData: { password } },
  });
  return { ns, password };
}

async function fileVolumes(h: PipelineHarness): Promise<void> {
  if (h.probe.volumeFiles) return fileVolumesReadBack(h);
  const { ns, password } = await fileVolumeSources(h);
  const script = checks([
    ['item at its path', 'test "$(cat /cfg/conf/a.txt)" = alpha'],
    ['item mode', 'test "$(stat -L -c %a /cfg/conf/a.txt)" = 600'],
    ['default mode', 'test "$(stat -L -c %a /cfg/b-file)" = 440'],
    ['only the items', 'test ! -e /cfg/c.txt'],
    ["the atomic writer's ..data link", 'test -L /cfg/..data && test -L /cfg/conf'],
    ['read-only', '! touch /cfg/new 2>/dev/null'],
    ['secret', `test "$(cat /sec/password)" = "${password}"`],
    ['secret mode', 'test "$(stat -L -c %a /sec/password)" = 400'],
    ['downward labels', 'test "$(cat /info/labels)" = "$(printf \'app="files"\\ntier="front"\')"'],
    ['downward name', 'test "$(cat /info/name)" = files'],
    ['projected configMap', 'test "$(cat /mix/b)" = beta'],
    ['projected secret', `test "$(cat /mix/creds/pw)" = "${password}"`],
    ['projected downward', `test "$(cat /mix/ns)" = "${ns}"`],
    ['configMap subPath', 'test "$(cat /etc/c.txt)" = gamma && test -f /etc/c.txt'],
    ['emptyDir subPathExpr', 'echo x > /logs/out && test -d /logs'],
  ]);
  await h.pods.create(ns, {
    metadata: { name: 'files', labels: { app: 'files', tier: 'front' } },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      volumes: [
        ...FILE_VOLUMES,
        { name: 'whole', configMap: { name: 'settings' } },
        { name: 'scratch', emptyDir: {} },
      ],
      containers: [
        shell('main', script, {
          // The failed check's line (or ALL-OK) comes back as the termination message.
          terminationMessagePolicy: 'FallbackToLogsOnError',
          terminationMessagePath: '/tmp/termination-log',
          env: [{ name: 'POD', value: 'files' }],
          volumeMounts: [
            { name: 'cfg', mountPath: '/cfg' },
            { name: 'sec', mountPath: '/sec' },
            { name: 'info', mountPath: '/info' },
            { name: 'mix', mountPath: '/mix' },
            { name: 'whole', mountPath: '/etc/c.txt', subPath: 'c.txt' },
            { name: 'scratch', mountPath: '/logs', subPathExpr: 'logs/$(POD)' },
          ],
        }),
        // A second container sees what the first wrote under the emptyDir's subPath, at the full path.
        shell(
          'reader',
          'i=0; while [ ! -f /scratch/logs/files/out ] && [ $i -lt 120 ]; do sleep 1; i=$((i+1)); done; test -f /scratch/logs/files/out',
          {
            volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        ),
      ],
    }),
  });
  const done = await h.pods.waitFor(
    ns,
    'files',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs: 3 * MINUTE,
      what: 'pod files finished',
    },
  );
  const main = containerStatus(done, 'main')?.state?.terminated;
  assert.equal(main?.exitCode, 0, `every file as asked (${main?.message})`);
  assert.match(main?.message ?? '', /ALL-OK/);
  assert.equal(
    containerStatus(done, 'reader')?.state?.terminated?.exitCode,
    0,
    'the subPath is in the volume',
  );

  // The Secret's value (plain and base64) is in no Event and nowhere in the state table.
  const forms = [password, Buffer.from(password).toString('base64')];
  const events = JSON.stringify((await h.admin.core.listNamespacedEvent({ namespace: ns })).items);
  const stored = await scanTable(h);
  assert.ok(stored.includes(ns), 'the table holds state of the pod');
  for (const form of forms) {
    assert.ok(!events.includes(form), "an Event holds the Secret's value");
    assert.ok(!stored.includes(form), "the state table holds the Secret's value");
  }
}

/**
 * The file-volumes scenario for a provider whose backend runs no processes
 * (the ECS simulation): the same volumes without the subPath mounts (which
 * Fargate refuses), the files read back through the probe, as the backend
 * wrote them, and the Secret also looked for in what the provider sent the
 * backend.
 */
async function fileVolumesReadBack(h: PipelineHarness): Promise<void> {
  const volumeFiles = h.probe.volumeFiles?.bind(h.probe);
  assert.ok(volumeFiles);
  const { ns, password } = await fileVolumeSources(h);
  const created = await h.pods.create(ns, {
    metadata: { name: 'files', labels: { app: 'files', tier: 'front' } },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      volumes: [...FILE_VOLUMES],
      containers: [
        shell('main', 'sleep 1', {
          volumeMounts: [
            { name: 'cfg', mountPath: '/cfg' },
            { name: 'sec', mountPath: '/sec' },
            { name: 'info', mountPath: '/info' },
            { name: 'mix', mountPath: '/mix' },
          ],
        }),
      ],
    }),
  });
  const done = await h.pods.waitFor(
    ns,
    'files',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    { timeoutMs: 3 * MINUTE, what: 'pod files finished' },
  );
  assert.equal(done.status?.phase, 'Succeeded', 'the pod ran after its volumes were written');
  const ref = { namespace: ns, name: 'files', uid: created.metadata?.uid ?? '' };
  const read = async (volume: string) => {
    const files = await volumeFiles(ref, volume);
    assert.ok(files, `volume ${volume} was written`);
    return new Map([...files].map(([path, f]) => [path, { text: f.content.toString(), mode: f.mode }]));
  };
  assert.deepEqual(
    await read('cfg'),
    new Map([
      ['b-file', { text: 'beta', mode: 0o440 }],
      ['conf/a.txt', { text: 'alpha', mode: 0o600 }],
    ]),
    'the items at their paths with their modes, only those',
  );
  assert.deepEqual(await read('sec'), new Map([['password', { text: password, mode: 0o400 }]]));
  assert.deepEqual(
    await read('info'),
    new Map([
      ['labels', { text: 'app="files"\ntier="front"', mode: 0o644 }],
      ['name', { text: 'files', mode: 0o644 }],
    ]),
  );
  assert.deepEqual(
    await read('mix'),
    new Map([
      ['b', { text: 'beta', mode: 0o644 }],
      ['creds/pw', { text: password, mode: 0o644 }],
      ['ns', { text: ns, mode: 0o644 }],
    ]),
  );

  // The Secret's value (plain and base64) is in no Event, nowhere in the state table, nor in what the backend was sent.
  const forms = [password, Buffer.from(password).toString('base64')];
  const events = JSON.stringify((await h.admin.core.listNamespacedEvent({ namespace: ns })).items);
  const stored = await scanTable(h);
  const backend = (await h.probe.backendText?.()) ?? '';
  assert.ok(stored.includes(ns), 'the table holds state of the pod');
  assert.ok(backend.includes('RunTask'), 'the backend was sent the task');
  for (const form of forms) {
    assert.ok(!events.includes(form), "an Event holds the Secret's value");
    assert.ok(!stored.includes(form), "the state table holds the Secret's value");
    assert.ok(!backend.includes(form), "a request to the backend or its logs hold the Secret's value");
  }
}

async function scanTable(h: PipelineHarness): Promise<string> {
  const env = testEnv();
  const { doc } = createDynamoDbClient({ endpoint: env.dynamodb.endpoint, region: env.dynamodb.region });
  const items: unknown[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: h.tableName, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return JSON.stringify(items);
}

async function volumeUpdate(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('vol-update');
  await h.admin.core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'live' }, data: { key: 'v1' } },
  });
  // Waits (at most 4 minutes) for both changes; the subPath mount must still show the first value.
  const script = [
    'test "$(cat /cfg/key)" = v1 || exit 4',
    'i=0',
    'until [ "$(cat /cfg/key)" = v2 ] && grep -q \'stage="two"\' /info/labels; do',
    '  i=$((i+1)); [ $i -gt 240 ] && exit 3; sleep 1',
    'done',
    'test "$(cat /pinned)" = v1 || exit 5',
  ].join('\n');
  await h.pods.create(ns, {
    metadata: { name: 'watcher', labels: { stage: 'one' } },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      volumes: [
        { name: 'cfg', configMap: { name: 'live' } },
        {
          name: 'info',
          downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
        },
      ],
      containers: [
        shell('main', script, {
          volumeMounts: [
            { name: 'cfg', mountPath: '/cfg' },
            { name: 'cfg', mountPath: '/pinned', subPath: 'key' },
            { name: 'info', mountPath: '/info' },
          ],
        }),
      ],
    }),
  });
  await h.pods.waitFor(ns, 'watcher', (p) => p.status?.phase === 'Running', {
    timeoutMs: 2 * MINUTE,
    what: 'pod watcher Running',
  });
  const changedAt = Date.now();
  await h.admin.core.replaceNamespacedConfigMap({
    namespace: ns,
    name: 'live',
    body: { metadata: { name: 'live' }, data: { key: 'v2' } },
  });
  await h.admin.core.patchNamespacedPod({
    namespace: ns,
    name: 'watcher',
    body: [{ op: 'replace', path: '/metadata/labels/stage', value: 'two' }],
  });
  const done = await h.pods.waitFor(
    ns,
    'watcher',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs: 4 * MINUTE,
      what: 'pod watcher saw both changes',
    },
  );
  assert.equal(
    containerStatus(done, 'main')?.state?.terminated?.exitCode,
    0,
    'the ConfigMap and the labels changed in the files (3: not within 4 minutes; 5: the subPath file changed too)',
  );
  assert.ok(Date.now() - changedAt < 3 * MINUTE, 'the change arrived within about a minute of polling');
}

async function missingSource(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('missing-cm');
  const pod = (name: string, optional: boolean, script: string): V1Pod => ({
    metadata: { name },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      volumes: [{ name: 'cfg', configMap: { name: 'later', optional } }],
      containers: [shell('main', script, { volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] })],
    }),
  });
  // A backend that runs no processes: the files are read back through the probe instead.
  const readBack = h.probe.volumeFiles?.bind(h.probe);
  const waiting = await h.pods.create(
    ns,
    pod('waits', false, readBack ? 'sleep 1' : 'test "$(cat /cfg/key)" = value || exit 3'),
  );
  const optionalPod = await h.pods.create(
    ns,
    pod('optional', true, readBack ? 'sleep 1' : 'test -d /cfg && test ! -e /cfg/key || exit 3'),
  );

  const optional = await h.pods.waitFor(
    ns,
    'optional',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs: 2 * MINUTE,
      what: 'pod optional finished',
    },
  );
  assert.equal(optional.status?.phase, 'Succeeded', 'a missing optional ConfigMap leaves the volume empty');
  if (readBack) {
    const ref = { namespace: ns, name: 'optional', uid: optionalPod.metadata?.uid ?? '' };
    assert.equal((await readBack(ref, 'cfg'))?.size, 0, 'the optional volume is empty');
  }

  const event = await waitFor(
    async () => {
      const list = await h.admin.core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: `involvedObject.uid=${waiting.metadata?.uid}`,
      });
      return list.items.find((e: CoreV1Event) => e.reason === 'FailedMount');
    },
    { timeoutMs: 2 * MINUTE, intervalMs: 500, what: 'the FailedMount Event' },
  );
  assert.equal(event.type, 'Warning');
  assert.equal(event.message, 'MountVolume.SetUp failed for volume "cfg" : configmap "later" not found');
  const pending = await h.admin.core.readNamespacedPod({ namespace: ns, name: 'waits' });
  assert.equal(pending.status?.phase, 'Pending');
  assert.equal(containerStatus(pending, 'main')?.state?.waiting?.reason, 'ContainerCreating');

  await h.admin.core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'later' }, data: { key: 'value' } },
  });
  const ran = await h.pods.waitFor(
    ns,
    'waits',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs: 3 * MINUTE,
      what: 'pod waits finished once its ConfigMap exists',
    },
  );
  assert.equal(ran.status?.phase, 'Succeeded', 'the pod read the ConfigMap created after it');
  if (readBack) {
    const ref = { namespace: ns, name: 'waits', uid: waiting.metadata?.uid ?? '' };
    assert.equal((await readBack(ref, 'cfg'))?.get('key')?.content.toString(), 'value');
  }
}
