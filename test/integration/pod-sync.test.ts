/**
 * The pod-sync function against the real API server, DynamoDB Local and the
 * real mock provider, invoked through the local Lambda runtime by the
 * in-process EventBridge bus (the envelope AWS delivers).
 *
 * Pods are created by the admin directly bound (spec.nodeName) to a fake Node
 * that nothing else acts on, tolerating every taint. pod-sync is the only
 * actor on them here; where a scenario needs a pod status (a "running" pod),
 * it runs one round of the real pod-status code with the kubelet's identity.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type CoreV1Event, type V1Container, type V1Pod, Watch } from '@kubernetes/client-node';
import { createPodSyncHandler } from '../../functions/pod-sync.ts';
import { buildPodReconciler } from '../../lib/app/pod-sync.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import {
  hintResource,
  POD_EVENT_DETAIL_TYPE,
  POD_EVENT_SOURCE,
  type PodEventDetail,
  type PodEventHint,
} from '../../lib/events/pod-event.ts';
import { isNotFound } from '../../lib/kube/client.ts';
import { LocalEventBus } from '../../lib/local/event-bus.ts';
import { type InvocationResult, LocalLambdaRuntime } from '../../lib/local/lambda-runtime.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { kubeEnvSources } from '../../lib/pod/env/env-sources.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { podSpecHash, podStatusHash } from '../../lib/pod/pod-hash.ts';
import { TERMINATED_MARK } from '../../lib/pod/status/pod-status-builders.ts';
import { PodStatusSyncer } from '../../lib/pod/status/pod-status-syncer.ts';
import { KubePodEventRecorder } from '../../lib/pod/sync/pod-events.ts';
import { PodSyncRetryError, type SyncResult } from '../../lib/pod/sync/pod-sync-result.ts';
import { MOCK_FAIL_CREATE_ANNOTATION } from '../../lib/provider/mock/mock-pod-plan.ts';
import { MockPodProvider, mockPodRecord } from '../../lib/provider/mock/mock-pods.ts';
import type { AppliedPodStatus, PodProvider } from '../../lib/provider/provider.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  kubeletClients,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const kubelet = kubeletClients(env);
const namespace = uniqueName('pod-sync');
const node = uniqueName('vk-sync');
const otherNode = uniqueName('not-ours');
const log = createLogger({ level: process.env.SVK_TEST_LOG_LEVEL ?? 'warn' });

let table: StateTable;
let knownPods: KnownPodStore;
let provider: MockPodProvider;
let runtime: LocalLambdaRuntime;
let bus: LocalEventBus;
const results: Array<{ key?: string; result: InvocationResult }> = [];

before(async () => {
  for (const name of [node, otherNode]) await admin.core.createNode({ body: { metadata: { name } } });
  await createTestNamespace(admin, namespace);
  const fresh = await freshTable(env);
  table = fresh.table;
  knownPods = new KnownPodStore(table);
  provider = new MockPodProvider({ table, clock: systemClock });
  runtime = new LocalLambdaRuntime({
    onResult: (_invocation, result) => {
      const value = result.status === 'ok' ? (result.result as SyncResult) : undefined;
      results.push({ ...(value ? { key: value.key } : {}), result });
    },
  });
  runtime.register({
    name: 'pod-sync',
    timeoutMs: 30_000,
    handler: createPodSyncHandler(
      functionEnv(fresh.name, { SVK_NODE_NAMES: node, SVK_POD_CLAIM_SECONDS: '10' }, env),
    ),
  });
  bus = new LocalEventBus();
  bus.addRule({
    name: 'pod-sync',
    pattern: { source: [POD_EVENT_SOURCE], 'detail-type': [POD_EVENT_DETAIL_TYPE] },
    target: runtime.asTarget('pod-sync'),
  });
});

beforeEach(() => {
  bus.duplicate = 1;
  bus.reorder = 'none';
  bus.retries = 0;
  bus.retryDelayMs = 0;
});

after(async () => {
  await runtime?.stopAll({ abortRunning: true });
  await deleteTestNamespace(admin, namespace);
  for (const name of [node, otherNode]) await admin.core.deleteNode({ name }).catch(() => undefined);
});

interface PodOptions {
  nodeName?: string;
  grace?: number;
  restartPolicy?: string;
  annotations?: Record<string, string>;
  container?: Partial<V1Container>;
}

/** A container command the mock stops only at the end of the grace period (it reads `trap '' TERM`). */
const IGNORES_TERM = ['sh', '-c', "trap '' TERM; sleep 3600"];

async function createPod(name: string, options: PodOptions = {}): Promise<V1Pod> {
  return admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: {
        name,
        namespace,
        labels: { app: 'sync-test' },
        ...(options.annotations ? { annotations: options.annotations } : {}),
      },
      spec: {
        nodeName: options.nodeName ?? node,
        tolerations: [{ operator: 'Exists' }],
        terminationGracePeriodSeconds: options.grace ?? 30,
        restartPolicy: options.restartPolicy ?? 'Always',
        automountServiceAccountToken: false,
        containers: [{ name: 'app', image: 'nginx:1.25', ...options.container }],
      },
    },
  });
}

async function readPod(name: string): Promise<V1Pod | undefined> {
  try {
    return await admin.core.readNamespacedPod({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function detail(pod: V1Pod, type: PodEventDetail['type'] = 'ADDED'): PodEventDetail {
  return {
    v: 1,
    type,
    node: pod.spec?.nodeName ?? node,
    namespace,
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    resourceVersion: pod.metadata?.resourceVersion ?? '0',
  };
}

/** Publishes the details (one PutEvents call) and waits for every delivery, retries included. */
async function publish(
  ...details: PodEventDetail[]
): Promise<Array<{ key?: string; result: InvocationResult }>> {
  const from = results.length;
  const response = await bus.putEvents(
    details.map((d) => ({
      Source: POD_EVENT_SOURCE,
      DetailType: POD_EVENT_DETAIL_TYPE,
      Detail: JSON.stringify(d),
    })),
  );
  assert.equal(response.FailedEntryCount, 0);
  await bus.whenIdle();
  return results.slice(from);
}

function outcomes(delivered: Array<{ result: InvocationResult }>): string[] {
  return delivered.map((d) =>
    d.result.status === 'ok' ? (d.result.result as SyncResult).outcome : d.result.status,
  );
}

/** The error of the first delivery, which must have failed. */
function failure(delivered: Array<{ result: InvocationResult }>): Error {
  const result = delivered[0]?.result;
  assert.ok(result && result.status !== 'ok', 'expected a failed invocation');
  assert.ok(result.error instanceof Error);
  return result.error;
}

async function eventsOf(uid: string): Promise<CoreV1Event[]> {
  return (await admin.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${uid}` }))
    .items;
}

/** pod-status's syncer with the kubelet's identity; `handOffMs` as pod-status's (its default: none). */
function statusSyncer(handOffMs?: number): PodStatusSyncer {
  return new PodStatusSyncer({
    core: kubelet.core,
    provider,
    knownPods,
    clock: systemClock,
    log,
    maxParallel: 4,
    ...(handOffMs === undefined ? {} : { handOffMs }),
  });
}

/** One pod-status round: writes the provider's status (Running for the mock). */
function statusRound(): Promise<{ written: number }> {
  return statusSyncer().syncNode(node);
}

describe('pod-sync', () => {
  it('creates an unknown pod once and records the version used', async () => {
    const pod = await createPod('create-once');
    const delivered = await publish(detail(pod));
    assert.deepEqual(outcomes(delivered), ['created']);
    const provided = await mockPodRecord(table, namespace, 'create-once');
    assert.equal(provided?.uid, pod.metadata?.uid);
    assert.equal(provided?.creates, 1);
    const record = await knownPods.get(node, namespace, 'create-once');
    assert.equal(record?.uid, pod.metadata?.uid);
    assert.equal(record?.appliedHash, podSpecHash((await readPod('create-once')) ?? pod));
    assert.equal(record?.claim, undefined);
    const events = await eventsOf(pod.metadata?.uid ?? '');
    assert.ok(events.some((e) => e.reason === 'ProviderCreateSuccess' && e.type === 'Normal'));

    // Delivered again later: nothing more happens.
    assert.deepEqual(outcomes(await publish(detail(pod, 'MODIFIED'))), ['skipped-unchanged']);
    assert.equal((await mockPodRecord(table, namespace, 'create-once'))?.creates, 1);
  });

  it('writes the status the provider reports at once: Running with no pod-status at all, which then finds it written', async () => {
    const pod = await createPod('pushed');
    assert.deepEqual(outcomes(await publish(detail(pod))), ['created']);
    // Nothing in this file writes pod statuses but pod-sync (statusRound is not called before this point).
    const running = await readPod('pushed');
    assert.equal(running?.status?.phase, 'Running');
    assert.match(running?.status?.podIP ?? '', /^10\./, 'podIP from the provider');
    assert.equal(running?.status?.containerStatuses?.[0]?.ready, true);
    const record = await knownPods.get(node, namespace, 'pushed');
    const reported = await provider.getPod(namespace, 'pushed');
    assert.equal(record?.statusHash, podStatusHash(reported?.status), 'recorded as pod-status records it');
    assert.equal(record?.claim, undefined);
    assert.equal(record?.pushUntil, undefined, 'the push mark goes with the recorded status');

    // pod-status's poll finds the status written and leaves the pod alone.
    const version = running?.metadata?.resourceVersion;
    await statusRound();
    assert.equal((await readPod('pushed'))?.metadata?.resourceVersion, version, 'no second status write');
    // Our own status write wakes pod-sync again (MODIFIED): it skips, writing nothing.
    assert.deepEqual(outcomes(await publish(detail(running ?? pod, 'MODIFIED'))), ['skipped-unchanged']);
    assert.equal((await readPod('pushed'))?.metadata?.resourceVersion, version);
  });

  it('every event delivered twice: one provider create', async () => {
    const pod = await createPod('twice');
    bus.duplicate = 2;
    const delivered = await publish(detail(pod));
    assert.equal(delivered.length, 2);
    assert.deepEqual(outcomes(delivered).sort(), ['created', 'skipped-unchanged']);
    assert.equal((await mockPodRecord(table, namespace, 'twice'))?.creates, 1);
  });

  it('three concurrent deliveries: one provider create, the others wait and skip', async () => {
    const pods = await Promise.all(['conc-a', 'conc-b', 'conc-c'].map((n) => createPod(n)));
    bus.duplicate = 3;
    const delivered = await publish(...pods.map((p) => detail(p)));
    assert.equal(delivered.length, 9);
    for (const p of pods) {
      const name = p.metadata?.name ?? '';
      const mine = delivered.filter((d) => d.key === `${namespace}/${name}`);
      assert.deepEqual(outcomes(mine).sort(), ['created', 'skipped-unchanged', 'skipped-unchanged'], name);
      assert.equal((await mockPodRecord(table, namespace, name))?.creates, 1, name);
    }
  });

  it('a batch delivered in reverse order: same provider calls as in order (one create, no update)', async () => {
    const first = await createPod('reordered');
    const labelled = await admin.core.patchNamespacedPod(
      { namespace, name: 'reordered', body: [{ op: 'add', path: '/metadata/labels/tier', value: 'web' }] },
      // JSON patch: the client's default content type for patch bodies that are arrays.
    );
    bus.hold();
    await bus.putEvents(
      [detail(first, 'ADDED'), detail(labelled, 'MODIFIED')].map((d) => ({
        Source: POD_EVENT_SOURCE,
        DetailType: POD_EVENT_DETAIL_TYPE,
        Detail: JSON.stringify(d),
      })),
    );
    const from = results.length;
    bus.release({ order: 'reverse' });
    await bus.whenIdle();
    assert.deepEqual(outcomes(results.slice(from)).sort(), ['created', 'skipped-unchanged']);
    const provided = await mockPodRecord(table, namespace, 'reordered');
    assert.equal(provided?.creates, 1);
    assert.equal(provided?.updates, 0);
    assert.equal((await knownPods.get(node, namespace, 'reordered'))?.appliedHash, podSpecHash(labelled));
  });

  it('a changed spec is applied with one update', async () => {
    const pod = await createPod('updated');
    await publish(detail(pod));
    const changed = await admin.core.patchNamespacedPod({
      namespace,
      name: 'updated',
      body: [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:1.26' }],
    });
    bus.duplicate = 2;
    assert.deepEqual(outcomes(await publish(detail(changed, 'MODIFIED'))).sort(), [
      'skipped-unchanged',
      'updated',
    ]);
    const provided = await mockPodRecord(table, namespace, 'updated');
    assert.equal(provided?.creates, 1);
    assert.equal(provided?.updates, 1);
    assert.equal(provided?.containers[0]?.image, 'nginx:1.26');
    assert.ok((await eventsOf(pod.metadata?.uid ?? '')).some((e) => e.reason === 'ProviderUpdateSuccess'));
  });

  it('delete with a 30 s grace period: the provider stops the pod at once, so pod-sync reports it terminated and then force-deletes it, in one reconcile', async () => {
    const pod = await createPod('graceful', { grace: 30 });
    await publish(detail(pod));
    await statusRound();
    assert.equal((await readPod('graceful'))?.status?.phase, 'Running');

    await admin.core.deleteNamespacedPod({ namespace, name: 'graceful', gracePeriodSeconds: 30 });
    const terminating = await readPod('graceful');
    assert.ok(terminating?.metadata?.deletionTimestamp);
    const { seen: statuses, stop } = await podChanges(terminating);
    const started = Date.now();
    try {
      const requests = await podRequests('graceful', async () => {
        assert.deepEqual(outcomes(await publish(detail(terminating, 'MODIFIED'))), ['force-deleted']);
      });
      // Read, terminated status, force delete: the kubelet's order.
      assert.deepEqual(requests, ['GET', 'PATCH', 'DELETE']);
      await waitFor(() => statuses.some((s) => s.startsWith('DELETED')), {
        timeoutMs: 10_000,
        what: 'the watch to see the pod deleted',
      });
    } finally {
      stop();
    }
    assert.ok(
      statuses.indexOf('MODIFIED Succeeded') >= 0,
      `terminated status seen first: ${statuses.join(', ')}`,
    );
    assert.ok(statuses.indexOf('MODIFIED Succeeded') < statuses.findIndex((s) => s.startsWith('DELETED')));
    assert.ok(Date.now() - started < 10_000, 'gone at once, not after the grace period');
    assert.equal(await readPod('graceful'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'graceful'), undefined, 'forgotten');
    const provided = await mockPodRecord(table, namespace, 'graceful');
    assert.ok(provided?.deletedAt !== undefined, 'the provider deleted the pod');
    assert.equal(provided?.deletes, 1);
    assert.ok((await eventsOf(pod.metadata?.uid ?? '')).some((e) => e.reason === 'ProviderDeleteSuccess'));

    // The same event delivered again, and the DELETED event: nothing left to do.
    bus.duplicate = 2;
    const again = outcomes(await publish(detail(terminating, 'MODIFIED')));
    assert.ok(
      again.every((o) => o === 'absent'),
      again.join(', '),
    );
    bus.duplicate = 1;
    assert.deepEqual(outcomes(await publish(detail(terminating, 'DELETED'))), ['absent']);
    assert.equal(
      (await mockPodRecord(table, namespace, 'graceful'))?.deletes,
      1,
      'deleted in the provider once',
    );
  });

  it('delete of a pod that ignores SIGTERM: the provider holds it for the grace period, pod-status reports it terminated then', async () => {
    const pod = await createPod('stubborn', {
      grace: 2,
      container: { command: IGNORES_TERM },
    });
    await publish(detail(pod));
    await statusRound();
    await admin.core.deleteNamespacedPod({ namespace, name: 'stubborn', gracePeriodSeconds: 2 });
    const terminating = (await readPod('stubborn')) ?? pod;
    assert.deepEqual(outcomes(await publish(detail(terminating, 'MODIFIED'))), ['deleted-in-provider']);
    const record = await knownPods.get(node, namespace, 'stubborn');
    assert.ok(record?.forceDeleteAt);
    assert.equal(record?.statusHash === TERMINATED_MARK, false, 'not reported terminated: it still runs');
    assert.notEqual((await readPod('stubborn'))?.status?.phase, 'Succeeded');
    await waitFor(
      async () => {
        await statusRound();
        return (await readPod('stubborn'))?.status?.phase === 'Succeeded';
      },
      { timeoutMs: 20_000, what: 'pod-status to report it terminated once the grace period ended' },
    );
    assert.deepEqual(outcomes(await publish(detail(terminating, 'MODIFIED'))), ['force-deleted']);
    assert.equal(await readPod('stubborn'), undefined);
  });

  it('terminating and never started: force-deleted from the API server at once', async () => {
    const pod = await createPod('never-started', { annotations: {} });
    await admin.core.deleteNamespacedPod({ namespace, name: 'never-started', gracePeriodSeconds: 30 });
    const terminating = (await readPod('never-started')) ?? pod;
    assert.deepEqual(outcomes(await publish(detail(terminating, 'MODIFIED'))), ['force-deleted']);
    assert.equal(await readPod('never-started'), undefined);
    assert.equal(
      await mockPodRecord(table, namespace, 'never-started'),
      undefined,
      'never created in the provider',
    );
  });

  it('the grace period ends: pod-status force-deletes with the UID precondition', async () => {
    // It ignores SIGTERM, so no terminated status hands the force delete off to its event.
    const pod = await createPod('grace-over', {
      grace: 2,
      container: { command: IGNORES_TERM },
    });
    await publish(detail(pod));
    await statusRound();
    await admin.core.deleteNamespacedPod({ namespace, name: 'grace-over', gracePeriodSeconds: 2 });
    const terminating = (await readPod('grace-over')) ?? pod;
    assert.deepEqual(outcomes(await publish(detail(terminating, 'MODIFIED'))), ['deleted-in-provider']);
    const syncer = statusSyncer();
    await waitFor(async () => (await syncer.forceDeleteDue([node])) > 0, {
      timeoutMs: 15_000,
      what: 'the force delete to fall due',
    });
    assert.equal(await readPod('grace-over'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'grace-over'), undefined);
  });

  it('a new pod under the same name: the old one is deleted in the provider, the new one created', async () => {
    const old = await createPod('reborn');
    await publish(detail(old));
    await admin.core.deleteNamespacedPod({ namespace, name: 'reborn', gracePeriodSeconds: 0 });
    const fresh = await createPod('reborn');
    assert.notEqual(fresh.metadata?.uid, old.metadata?.uid);
    // The old pod's DELETED event arrives after the new pod exists, and in the same batch.
    bus.reorder = 'reverse';
    const delivered = await publish(detail(old, 'DELETED'), detail(fresh, 'ADDED'));
    assert.ok(outcomes(delivered).includes('created'));
    const provided = await mockPodRecord(table, namespace, 'reborn');
    assert.equal(provided?.uid, fresh.metadata?.uid);
    assert.equal(provided?.deletedAt, undefined, 'the new pod keeps running');
    assert.equal(provided?.creates, 1);
    assert.equal((await knownPods.get(node, namespace, 'reborn'))?.uid, fresh.metadata?.uid);
  });

  it('a pod on another node is never touched', async () => {
    const pod = await createPod('elsewhere', { nodeName: otherNode });
    const delivered = await publish({ ...detail(pod), node });
    assert.deepEqual(outcomes(delivered), ['not-ours']);
    assert.equal(await mockPodRecord(table, namespace, 'elsewhere'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'elsewhere'), undefined);
    assert.equal(await knownPods.get(otherNode, namespace, 'elsewhere'), undefined);
    assert.deepEqual(await eventsOf(pod.metadata?.uid ?? ''), []);
    const after = await readPod('elsewhere');
    assert.equal(after?.metadata?.resourceVersion, pod.metadata?.resourceVersion, 'the pod was not written');
  });

  it('a missing ConfigMap leaves the pod Pending with an Event, and is retried until it exists', async () => {
    const pod = await createPod('needs-config', {
      container: {
        env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'late-config', key: 'mode' } } }],
      },
    });
    const first = await publish(detail(pod));
    const error = failure(first);
    assert.equal(error.name, 'PodSyncRetryError');
    assert.match(error.message, /configmap "late-config" not found/);
    assert.equal((await readPod('needs-config'))?.status?.phase, 'Pending');
    assert.equal(await mockPodRecord(table, namespace, 'needs-config'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'needs-config'), undefined);
    const warning = (await eventsOf(pod.metadata?.uid ?? '')).find(
      (e) => e.reason === 'MandatoryConfigMapNotFound',
    );
    assert.equal(warning?.type, 'Warning');
    assert.match(warning?.message ?? '', /late-config/);

    // EventBridge retries; the ConfigMap appears meanwhile.
    bus.retries = 40;
    bus.retryDelayMs = 250;
    const from = results.length;
    const putting = bus.putEvents([
      { Source: POD_EVENT_SOURCE, DetailType: POD_EVENT_DETAIL_TYPE, Detail: JSON.stringify(detail(pod)) },
    ]);
    await putting;
    await waitFor(() => results.length > from, { timeoutMs: 10_000, what: 'a failed retry' });
    await admin.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'late-config' }, data: { mode: 'fast' } },
    });
    await bus.whenIdle();
    assert.equal(outcomes(results.slice(from)).at(-1), 'created');
    assert.equal((await mockPodRecord(table, namespace, 'needs-config'))?.creates, 1);
  });

  it('a provider create failure with restartPolicy Never: Failed/ProviderFailed and an Event', async () => {
    const pod = await createPod('refused', {
      restartPolicy: 'Never',
      annotations: { [MOCK_FAIL_CREATE_ANNOTATION]: 'no capacity left' },
    });
    assert.deepEqual(outcomes(await publish(detail(pod))), ['create-failed']);
    const failed = await readPod('refused');
    assert.equal(failed?.status?.phase, 'Failed');
    assert.equal(failed?.status?.reason, 'ProviderFailed');
    assert.equal(failed?.status?.message, 'no capacity left');
    const event = (await eventsOf(pod.metadata?.uid ?? '')).find((e) => e.reason === 'ProviderCreateFailed');
    assert.equal(event?.message, 'no capacity left');
    const record = await knownPods.get(node, namespace, 'refused');
    assert.equal(record?.appliedHash, undefined);
    assert.equal(record?.claim, undefined, 'the claim was released');
    // Failed is final: later events skip it.
    assert.deepEqual(outcomes(await publish(detail(pod, 'MODIFIED'))), ['skipped-terminal']);
  });

  it('a provider create failure with restartPolicy Always: Pending/ProviderFailed and retried', async () => {
    const pod = await createPod('refused-retry', {
      annotations: { [MOCK_FAIL_CREATE_ANNOTATION]: 'try later' },
    });
    const delivered = await publish(detail(pod));
    assert.equal(failure(delivered).name, 'PodSyncRetryError');
    const pending = await readPod('refused-retry');
    assert.equal(pending?.status?.phase, 'Pending');
    assert.equal(pending?.status?.reason, 'ProviderFailed');
  });
});

/** Publishes one detail with pod-watch's hints in its resources, and waits for its deliveries. */
async function publishHinted(
  d: PodEventDetail,
  hints: PodEventHint[],
): Promise<Array<{ key?: string; result: InvocationResult }>> {
  const from = results.length;
  await bus.putEvents([
    {
      Source: POD_EVENT_SOURCE,
      DetailType: POD_EVENT_DETAIL_TYPE,
      Detail: JSON.stringify(d),
      Resources: hints.map(hintResource),
    },
  ]);
  await bus.whenIdle();
  return results.slice(from);
}

/** Runs `work` and returns the Kubernetes requests this process sent for the pod `name` meanwhile (`GET`, `DELETE`...). */
/** The pod's changes after the version given, as a watch sees them: `TYPE phase` per event. */
async function podChanges(pod: V1Pod): Promise<{ seen: string[]; stop(): void }> {
  const seen: string[] = [];
  const controller = await new Watch(admin.config).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    { fieldSelector: `metadata.name=${pod.metadata?.name}`, resourceVersion: pod.metadata?.resourceVersion },
    (type, object: V1Pod) => seen.push(`${type} ${object.status?.phase}`),
    () => undefined,
  );
  return { seen, stop: () => controller.abort() };
}

async function podRequests(name: string, work: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const prefix = `/api/v1/namespaces/${namespace}/pods/${name}`;
  const onRequest = (message: unknown) => {
    if (typeof message !== 'object' || message === null || !('request' in message)) return;
    const { method, path } = message.request as ClientRequest;
    if (path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`)) seen.push(method);
  };
  subscribe('http.client.request.start', onRequest);
  try {
    await work();
  } finally {
    unsubscribe('http.client.request.start', onRequest);
  }
  return seen;
}

function steps(delivered: Array<{ result: InvocationResult }>): string[][] {
  return delivered.map((d) => (d.result.status === 'ok' ? (d.result.result as SyncResult).steps : []));
}

describe('pod-sync with what the event says (the node, the uid gone, pod-watch’s hints)', () => {
  it('an event marked unchanged or deleted-next does nothing at all', async () => {
    const pod = await createPod('hinted-skip');
    await publish(detail(pod));
    const version = (await readPod('hinted-skip'))?.metadata?.resourceVersion;
    const requests = await podRequests('hinted-skip', async () => {
      for (const hint of ['unchanged', 'deleted-next'] as const) {
        const delivered = await publishHinted(detail(pod, 'MODIFIED'), [hint]);
        assert.deepEqual(outcomes(delivered), ['skipped-hinted']);
        assert.deepEqual(steps(delivered), [[`hint:${hint}`]]);
      }
    });
    assert.deepEqual(requests, []);
    assert.equal((await readPod('hinted-skip'))?.metadata?.resourceVersion, version);
  });

  it('not-running force-deletes by uid without reading the pod; the DELETED event then forgets the record without reading it either', async () => {
    // Reported terminated by pod-status (it ignored SIGTERM until its grace period ended), not yet force-deleted.
    const terminating = await terminatingPastGrace('hinted-gone');
    assert.equal((await statusSyncer(60_000).syncNode(node)).terminated, 1);
    const stopped = (await readPod('hinted-gone')) ?? terminating;
    assert.equal(stopped.status?.phase, 'Succeeded');

    const forced = await podRequests('hinted-gone', async () => {
      const delivered = await publishHinted(detail(stopped, 'MODIFIED'), ['not-running']);
      assert.deepEqual(outcomes(delivered), ['force-deleted']);
      assert.deepEqual(steps(delivered), [['hint:not-running']]);
    });
    assert.deepEqual(forced, ['DELETE'], 'the force delete only');
    assert.equal(await readPod('hinted-gone'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'hinted-gone'), undefined, 'forgotten, unclaimed');

    const cleaned = await podRequests('hinted-gone', async () => {
      const delivered = await publish(detail(stopped, 'DELETED'));
      assert.deepEqual(outcomes(delivered), ['absent']);
      assert.deepEqual(steps(delivered), [['delete-gone']]);
    });
    assert.deepEqual(cleaned, [], 'the pod is not read');
    assert.equal((await mockPodRecord(table, namespace, 'hinted-gone'))?.deletes, 1);
  });

  /** A pod deleted with a 1 s grace period, deleted in the provider, its grace period over: what pod-status finds in a burst. */
  /** A pod that ignores SIGTERM (the provider holds it until its grace period ends), deleted, and now past its grace period. */
  async function terminatingPastGrace(name: string): Promise<V1Pod> {
    const pod = await createPod(name, { grace: 1, container: { command: IGNORES_TERM } });
    await publish(detail(pod));
    await admin.core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 1 });
    const terminating = (await readPod(name)) ?? pod;
    assert.deepEqual(outcomes(await publish(detail(terminating, 'MODIFIED'))), ['deleted-in-provider']);
    const due = Date.parse((await knownPods.get(node, namespace, name))?.forceDeleteAt ?? '');
    await waitFor(() => Date.now() > due, { timeoutMs: 10_000, what: 'the grace period to end' });
    // deletionTimestamp has whole seconds: the provider's own end of the grace period may come a moment later.
    await waitFor(async () => (await provider.getPod(namespace, name)) === undefined, {
      timeoutMs: 10_000,
      what: 'the provider to stop the pod',
    });
    return terminating;
  }

  it('a pod reported terminated after its grace period ended: one force delete, by the event of its terminated status', async () => {
    const terminating = await terminatingPastGrace('late-done');
    const syncer = statusSyncer(60_000);
    const requests = await podRequests('late-done', async () => {
      assert.equal((await syncer.syncNode(node)).terminated, 1);
      // Due by its grace period, but handed off to pod-sync: neither this round nor a later one force-deletes it.
      assert.equal(await syncer.forceDeleteDue([node]), 0);
      assert.equal(await statusSyncer(60_000).forceDeleteDue([node]), 0);
      const stopped = await readPod('late-done');
      assert.equal(stopped?.status?.phase, 'Succeeded');
      const record = await knownPods.get(node, namespace, 'late-done');
      assert.ok(Date.parse(record?.handedOffUntil ?? '') > Date.now(), 'handed off to pod-sync');
      // The cluster reconciler's re-sync (a reconcile without an event) leaves it to that event too.
      const resync = buildPodReconciler({
        core: kubelet.core,
        provider,
        knownPods,
        events: new KubePodEventRecorder({ core: kubelet.core, clock: systemClock, log }),
        envSources: kubeEnvSources(kubelet.core),
        nodes: [node],
        clock: systemClock,
        log,
        owner: uniqueName('reconcile'),
        claimMs: 10_000,
        waitUntil: systemClock.monotonic() + 20_000,
      });
      assert.equal((await resync.reconcile(namespace, 'late-done')).outcome, 'skipped-deleting');
      // The status write's event, however late it reaches pod-sync.
      const delivered = await publishHinted(detail(stopped ?? terminating, 'MODIFIED'), ['not-running']);
      assert.deepEqual(outcomes(delivered), ['force-deleted']);
      assert.equal(await statusSyncer(60_000).forceDeleteDue([node]), 0);
    });
    assert.equal(requests.filter((m) => m === 'DELETE').length, 1, `one force delete: ${requests.join(' ')}`);
    assert.equal(await readPod('late-done'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'late-done'), undefined);
  });

  it('the event of a terminated status is lost: pod-status force-deletes the pod once the hand-off ends', async () => {
    await terminatingPastGrace('handoff-lost');
    const requests = await podRequests('handoff-lost', async () => {
      assert.equal((await statusSyncer(1_000).syncNode(node)).terminated, 1);
      await waitFor(async () => (await statusSyncer(1_000).forceDeleteDue([node])) > 0, {
        timeoutMs: 15_000,
        what: 'the hand-off to end',
      });
    });
    assert.equal(requests.filter((m) => m === 'DELETE').length, 1);
    assert.equal(await readPod('handoff-lost'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'handoff-lost'), undefined);
  });

  it('a pod deleted at once (grace 0): its DELETED event forgets the record and deletes the provider pod without reading the pod', async () => {
    const pod = await createPod('gone-claimed');
    await publish(detail(pod));
    const record = await knownPods.get(node, namespace, 'gone-claimed');
    assert.ok(record);
    await admin.core.deleteNamespacedPod({ namespace, name: 'gone-claimed', gracePeriodSeconds: 0 });
    const requests = await podRequests('gone-claimed', async () => {
      const delivered = await publish(detail(pod, 'DELETED'));
      assert.deepEqual(outcomes(delivered), ['absent']);
      assert.deepEqual(steps(delivered), [['forget-stale']]);
    });
    assert.deepEqual(requests, [], 'the pod is not read');
    assert.equal(await knownPods.get(node, namespace, 'gone-claimed'), undefined);
    assert.ok((await mockPodRecord(table, namespace, 'gone-claimed'))?.deletedAt !== undefined);
  });

  it('a record saying the terminated status was written force-deletes without reading the pod', async () => {
    const terminating = await terminatingPastGrace('known-done');
    assert.equal((await statusSyncer(60_000).syncNode(node)).terminated, 1);
    const requests = await podRequests('known-done', async () => {
      const delivered = await publish(detail(terminating, 'MODIFIED'));
      assert.deepEqual(outcomes(delivered), ['force-deleted']);
      assert.deepEqual(steps(delivered), [['force-delete-known']]);
    });
    assert.deepEqual(requests, ['DELETE']);
    assert.equal(await knownPods.get(node, namespace, 'known-done'), undefined);
  });

  it('an ADDED event creates with the pod read once and no record read; a record that exists after all makes it read in order', async () => {
    const pod = await createPod('added-once');
    const requests = await podRequests('added-once', async () => {
      assert.deepEqual(outcomes(await publish(detail(pod))), ['created']);
    });
    assert.deepEqual(requests.sort(), ['GET', 'PATCH'], 'one read, one status write');
    // Delivered again: the pod is read, the claim on "no record" fails, and the record decides.
    const again = await publish(detail(pod));
    assert.deepEqual(outcomes(again), ['skipped-unchanged']);
    assert.deepEqual(steps(again), [['apply:create', 'skip:unchanged']]);
    assert.equal((await mockPodRecord(table, namespace, 'added-once'))?.creates, 1);
  });
});

describe('pod-sync rejects malformed events, writing nothing', () => {
  let target: V1Pod;
  before(async () => {
    target = await createPod('malformed-target');
  });

  function envelope(overrides: Record<string, unknown> = {}, detailOverrides: Record<string, unknown> = {}) {
    return {
      version: '0',
      id: 'e1',
      'detail-type': POD_EVENT_DETAIL_TYPE,
      source: POD_EVENT_SOURCE,
      account: '000000000000',
      time: new Date().toISOString(),
      region: 'us-east-1',
      resources: [],
      detail: { ...detail(target), ...detailOverrides },
      ...overrides,
    };
  }

  async function rejects(event: unknown, message: RegExp): Promise<void> {
    const result = await runtime.invoke('pod-sync', event).done;
    assert.equal(result.status, 'error');
    const error = (result as { error: Error }).error;
    assert.equal(error.name, 'InvalidEventError');
    assert.match(error.message, message);
    assert.equal(
      await mockPodRecord(table, namespace, 'malformed-target'),
      undefined,
      'nothing in the provider',
    );
    assert.equal(await knownPods.get(node, namespace, 'malformed-target'), undefined, 'no known-pod record');
    assert.deepEqual(await eventsOf(target.metadata?.uid ?? ''), [], 'no Kubernetes event');
  }

  it('a missing field', async () => {
    const event = envelope();
    const { name: _name, ...withoutName } = event.detail;
    await rejects({ ...event, detail: withoutName }, /detail\.name/);
  });

  it('a wrong-typed field', async () => {
    await rejects(envelope({}, { resourceVersion: 42 }), /detail\.resourceVersion/);
  });

  it('an unknown detail-type', async () => {
    await rejects(envelope({ 'detail-type': 'PodExploded' }), /detail-type/);
  });

  it('an oversized event', async () => {
    await rejects(envelope({}, { padding: 'x'.repeat(100 * 1024) }), /larger than any pod event/);
  });

  it('the same event well-formed is acted on (the target is a real pod)', async () => {
    const result = await runtime.invoke('pod-sync', envelope()).done;
    assert.equal(result.status, 'ok');
    assert.equal((result as { result: SyncResult }).result.outcome, 'created');
  });
});

/**
 * The real mock provider with a gate: the next call of one kind stops inside
 * the provider until the test opens it, as a slow or frozen invocation would.
 */
class GatedProvider implements PodProvider {
  readonly calls: string[] = [];
  private gates = new Map<string, { entered: () => void; opened: Promise<void> }>();

  constructor(private readonly inner: PodProvider) {}

  /** Stops the next `op` call; `entered` resolves once it is stopped inside the provider. */
  gateNext(op: 'create' | 'update' | 'delete'): { entered: Promise<void>; open(): void } {
    let entered = () => {};
    let open = () => {};
    const enteredPromise = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gates.set(op, { entered, opened });
    return { entered: enteredPromise, open };
  }

  private async pass(op: string): Promise<void> {
    this.calls.push(op);
    const gate = this.gates.get(op);
    if (!gate) return;
    this.gates.delete(op);
    gate.entered();
    // A frozen invocation ignores its abort signal, so the gate does too.
    await gate.opened;
  }

  async createPod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    await this.pass('create');
    return this.inner.createPod(pod, signal);
  }
  async updatePod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    await this.pass('update');
    return this.inner.updatePod(pod, signal);
  }
  async deletePod(pod: V1Pod, signal?: AbortSignal): ReturnType<PodProvider['deletePod']> {
    await this.pass('delete');
    return this.inner.deletePod(pod, signal);
  }
  getPod(namespace: string, name: string, signal?: AbortSignal) {
    return this.inner.getPod(namespace, name, signal);
  }
  listPods(nodeName: string, signal?: AbortSignal) {
    return this.inner.listPods(nodeName, signal);
  }
}

/** The real store, counting reads: a reconcile that reads twice is waiting for a claim. */
class CountingStore extends KnownPodStore {
  gets = 0;
  override get(n: string, ns: string, name: string) {
    this.gets++;
    return super.get(n, ns, name);
  }
}

describe('pod-sync claim protocol (two reconciles of one key, one stopped inside the provider)', () => {
  function reconciler(
    p: PodProvider,
    options: { claimMs?: number; store?: KnownPodStore; core?: typeof kubelet.core; clock?: Clock } = {},
  ) {
    const clock = options.clock ?? systemClock;
    return buildPodReconciler({
      core: options.core ?? kubelet.core,
      provider: p,
      knownPods: options.store ?? knownPods,
      events: new KubePodEventRecorder({ core: kubelet.core, clock: systemClock, log }),
      envSources: kubeEnvSources(kubelet.core),
      nodes: [node],
      clock,
      log,
      owner: uniqueName('req'),
      claimMs: options.claimMs ?? 10_000,
      waitUntil: clock.monotonic() + 20_000,
    });
  }

  it('a status write that fails after the create leaves the create done; the poll writes the status', async () => {
    await createPod('push-fails');
    // The real API client, with its status writes refused as an outage of that one call would.
    const refusing = Object.create(kubelet.core) as typeof kubelet.core;
    refusing.patchNamespacedPodStatus = async () => {
      throw new Error('status write refused');
    };
    const result = await reconciler(provider, { core: refusing }).reconcile(namespace, 'push-fails');
    assert.equal(result.outcome, 'created');
    assert.equal((await mockPodRecord(table, namespace, 'push-fails'))?.creates, 1);
    const record = await knownPods.get(node, namespace, 'push-fails');
    assert.ok(record?.appliedHash, 'the create is recorded');
    assert.equal(record?.claim, undefined);
    assert.equal(record?.statusHash, undefined, 'nothing recorded as written');
    assert.equal(record?.pushUntil, undefined, 'the push mark is dropped: pod-status may write it now');
    assert.notEqual((await readPod('push-fails'))?.status?.phase, 'Running');

    assert.ok((await statusRound()).written >= 1);
    assert.equal((await readPod('push-fails'))?.status?.phase, 'Running');
  });

  it('a delivery arriving during a create waits for it, then skips', async () => {
    await createPod('claim-wait');
    const gated = new GatedProvider(provider);
    const gate = gated.gateNext('create');
    const first = reconciler(gated).reconcile(namespace, 'claim-wait');
    await gate.entered;
    const store = new CountingStore(table);
    const second = reconciler(gated, { store }).reconcile(namespace, 'claim-wait');
    await waitFor(() => store.gets >= 2, { timeoutMs: 10_000, what: 'the second reconcile to wait' });
    gate.open();
    assert.equal((await first).outcome, 'created');
    const waited = await second;
    assert.equal(waited.outcome, 'skipped-unchanged');
    assert.deepEqual(waited.steps, ['wait', 'skip:unchanged']);
    assert.deepEqual(gated.calls, ['create']);
    assert.equal((await mockPodRecord(table, namespace, 'claim-wait'))?.creates, 1);
  });

  it('a claimant frozen inside createPod is taken over once its claim expires; the pod starts once', async () => {
    await createPod('claim-crash');
    const frozen = new GatedProvider(provider);
    const gate = frozen.gateNext('create');
    const first = reconciler(frozen, { claimMs: 1_500 }).reconcile(namespace, 'claim-crash');
    const firstSettled = first.then(
      (r) => r,
      (err: unknown) => err,
    );
    await gate.entered;
    const taker = new GatedProvider(provider);
    const second = await reconciler(taker, { claimMs: 1_500 }).reconcile(namespace, 'claim-crash');
    assert.equal(second.outcome, 'created');
    assert.equal(second.steps[0], 'wait');
    assert.deepEqual(taker.calls, ['create']);
    assert.equal((await mockPodRecord(table, namespace, 'claim-crash'))?.creates, 1);
    assert.equal((await knownPods.get(node, namespace, 'claim-crash'))?.claim, undefined);

    // The frozen one wakes up late: its call was cut off at its claim's end, and nothing is done twice.
    gate.open();
    const late = await firstSettled;
    assert.ok(late instanceof PodSyncRetryError, String(late));
    assert.equal((await mockPodRecord(table, namespace, 'claim-crash'))?.creates, 1);
    assert.ok((await knownPods.get(node, namespace, 'claim-crash'))?.appliedHash);
  });

  for (const offsetMs of [30_000, -30_000]) {
    const ahead = offsetMs > 0;
    it(`wall clocks 30 s apart: a taker ${ahead ? 'ahead' : 'behind'} by 30 s ${ahead ? 'waits for a live claim past its until' : 'takes a frozen claim over after a whole claim of its own'}; the pod starts once`, async () => {
      const name = ahead ? 'skew-ahead' : 'skew-behind';
      await createPod(name);
      // Ahead: long enough that the taker's polls all fall within the holder's claim.
      const claimMs = ahead ? 10_000 : 3_000;
      const held = new GatedProvider(provider);
      const gate = held.gateNext('create');
      const first = reconciler(held, { claimMs }).reconcile(namespace, name);
      const firstSettled = first.then(
        (r) => r,
        (err: unknown) => err,
      );
      await gate.entered;
      const skewed: Clock = { ...systemClock, now: () => Date.now() + offsetMs };
      const taker = new GatedProvider(provider);
      const store = new CountingStore(table);
      const started = performance.now();
      const second = reconciler(taker, { claimMs, store, clock: skewed }).reconcile(namespace, name);
      if (ahead) {
        // Until the holder's call is cut off, the taker (whose clock says the claim ended 27 s ago) only waits.
        await waitFor(() => store.gets >= 3, { timeoutMs: 10_000, what: 'the taker to wait' });
        assert.deepEqual(taker.calls, [], 'no provider call under a live claim');
        gate.open();
        assert.equal(((await firstSettled) as SyncResult).outcome, 'created');
        const waited = await second;
        assert.deepEqual(waited.steps, ['wait', 'skip:unchanged']);
      } else {
        // The holder froze: its claim's until lies 33 s ahead on the taker's clock, but the taker takes it
        // over once it has watched it unchanged for a whole claim, within its 20 s wait.
        const took = await second;
        assert.equal(took.outcome, 'created');
        assert.deepEqual(took.steps, ['wait', 'apply:create']);
        assert.ok(performance.now() - started >= claimMs, 'not before a whole claim');
        gate.open();
        assert.ok((await firstSettled) instanceof PodSyncRetryError, 'the holder was cut off');
      }
      assert.equal((await mockPodRecord(table, namespace, name))?.creates, 1);
      assert.equal((await knownPods.get(node, namespace, name))?.claim, undefined);
    });
  }

  it('a newer spec arriving while an older one is applied is applied right after it', async () => {
    await createPod('claim-newer');
    const gated = new GatedProvider(provider);
    const gate = gated.gateNext('create');
    const first = reconciler(gated).reconcile(namespace, 'claim-newer');
    await gate.entered;
    const changed = await admin.core.patchNamespacedPod({
      namespace,
      name: 'claim-newer',
      body: [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:1.27' }],
    });
    const store = new CountingStore(table);
    const second = reconciler(gated, { store }).reconcile(namespace, 'claim-newer');
    await waitFor(() => store.gets >= 2, { timeoutMs: 10_000, what: 'the second reconcile to wait' });
    gate.open();
    assert.equal((await first).outcome, 'created');
    const updated = await second;
    assert.deepEqual(updated.steps, ['wait', 'apply:update']);
    assert.deepEqual(gated.calls, ['create', 'update']);
    const provided = await mockPodRecord(table, namespace, 'claim-newer');
    assert.equal(provided?.containers[0]?.image, 'nginx:1.27');
    assert.equal((await knownPods.get(node, namespace, 'claim-newer'))?.appliedHash, podSpecHash(changed));
  });

  it('a delete arriving during a create waits for it, then deletes what was created', async () => {
    await createPod('claim-delete');
    const gated = new GatedProvider(provider);
    const gate = gated.gateNext('create');
    const first = reconciler(gated).reconcile(namespace, 'claim-delete');
    await gate.entered;
    await admin.core.deleteNamespacedPod({ namespace, name: 'claim-delete', gracePeriodSeconds: 0 });
    const store = new CountingStore(table);
    const second = reconciler(gated, { store }).reconcile(namespace, 'claim-delete');
    await waitFor(() => store.gets >= 2, { timeoutMs: 10_000, what: 'the delete to wait' });
    gate.open();
    assert.equal((await first).outcome, 'created');
    const deleted = await second;
    assert.deepEqual(deleted.steps, ['wait', 'forget-stale', 'delete-orphan']);
    assert.equal(deleted.outcome, 'absent');
    const provided = await mockPodRecord(table, namespace, 'claim-delete');
    assert.ok(provided?.deletedAt !== undefined, 'deleted in the provider');
    assert.equal(provided?.creates, 1);
    assert.equal(await knownPods.get(node, namespace, 'claim-delete'), undefined);
  });
});
