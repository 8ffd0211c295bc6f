/**
 * The pod-status function against the real API server, DynamoDB Local and the
 * real mock provider, through the local Lambda runtime; pods reach the
 * provider through the real pod-sync function. Short invocations (6 s, a
 * round every second) stand in for the production minute.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createPodStatusHandler } from '../../functions/pod-status.ts';
import { createPodSyncHandler } from '../../functions/pod-sync.ts';
import type { PodStatusResult } from '../../lib/app/pod-status.ts';
import { systemClock } from '../../lib/clock.ts';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../../lib/events/pod-event.ts';
import { isNotFound } from '../../lib/kube/client.ts';
import { LocalLambdaRuntime, scheduledEvent } from '../../lib/local/lambda-runtime.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import { podStatusHash } from '../../lib/pod/pod-hash.ts';
import type { SyncResult } from '../../lib/pod/sync/pod-sync-result.ts';
import {
  MOCK_EXIT_CODE_ANNOTATION,
  MOCK_FINISH_AFTER_ANNOTATION,
} from '../../lib/provider/mock/mock-pod-plan.ts';
import { MockPodProvider, mockPodRecord } from '../../lib/provider/mock/mock-pods.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const namespace = uniqueName('pod-status');
const node = uniqueName('vk-status');
const otherNode = uniqueName('not-ours');

let table: StateTable;
let knownPods: KnownPodStore;
let provider: MockPodProvider;
let runtime: LocalLambdaRuntime;

before(async () => {
  await admin.core.createNode({ body: { metadata: { name: node } } });
  await createTestNamespace(admin, namespace);
  const fresh = await freshTable(env);
  table = fresh.table;
  knownPods = new KnownPodStore(table);
  provider = new MockPodProvider({ table, clock: systemClock });
  const fnEnv = functionEnv(
    fresh.name,
    {
      SVK_NODE_NAMES: node,
      SVK_POD_STATUS_INTERVAL_SECONDS: '1',
      SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS: '1000',
      SVK_LOCK_POLL_MS: '250',
    },
    env,
  );
  runtime = new LocalLambdaRuntime();
  runtime.register({ name: 'pod-sync', timeoutMs: 30_000, handler: createPodSyncHandler(fnEnv) });
  runtime.register({ name: 'pod-status', timeoutMs: 6_000, handler: createPodStatusHandler(fnEnv) });
});

after(async () => {
  await runtime?.stopAll({ abortRunning: true });
  await deleteTestNamespace(admin, namespace);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
});

async function createPod(
  name: string,
  options: {
    restartPolicy?: string;
    annotations?: Record<string, string>;
    grace?: number;
    command?: string[];
  } = {},
): Promise<V1Pod> {
  return admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace, ...(options.annotations ? { annotations: options.annotations } : {}) },
      spec: {
        nodeName: node,
        tolerations: [{ operator: 'Exists' }],
        restartPolicy: options.restartPolicy ?? 'Always',
        terminationGracePeriodSeconds: options.grace ?? 30,
        automountServiceAccountToken: false,
        containers: [
          { name: 'app', image: 'busybox:1.36', ...(options.command ? { command: options.command } : {}) },
        ],
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

/** Delivers a pod event for `name` to pod-sync, as the bus would. */
async function sync(name: string, type: 'ADDED' | 'MODIFIED' = 'ADDED'): Promise<SyncResult> {
  const pod = await readPod(name);
  const result = await runtime.invoke('pod-sync', {
    version: '0',
    id: randomUUID(),
    'detail-type': POD_EVENT_DETAIL_TYPE,
    source: POD_EVENT_SOURCE,
    account: '000000000000',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [],
    detail: {
      v: 1,
      type,
      node,
      namespace,
      name,
      uid: pod?.metadata?.uid ?? 'gone',
      resourceVersion: pod?.metadata?.resourceVersion ?? '0',
    },
  }).done;
  assert.equal(result.status, 'ok', result.status === 'ok' ? '' : String(result.error));
  return (result as { result: SyncResult }).result;
}

/** One whole pod-status invocation (about 5 s of rounds). */
async function statusInvocation(): Promise<PodStatusResult> {
  const result = await runtime.invoke('pod-status', scheduledEvent()).done;
  assert.equal(result.status, 'ok', result.status === 'ok' ? '' : String(result.error));
  return (result as { result: PodStatusResult }).result;
}

describe('pod-status', () => {
  it('writes the provider status: Running, then Succeeded, or Failed with the exit code', async () => {
    await createPod('runs');
    await createPod('finishes', { annotations: { [MOCK_FINISH_AFTER_ANNOTATION]: '2' } });
    await createPod('fails', {
      restartPolicy: 'Never',
      annotations: { [MOCK_FINISH_AFTER_ANNOTATION]: '1', [MOCK_EXIT_CODE_ANNOTATION]: '3' },
    });
    for (const name of ['runs', 'finishes', 'fails']) assert.equal((await sync(name)).outcome, 'created');
    const result = await statusInvocation();
    assert.equal(result.role, 'holder');
    assert.ok(result.rounds >= 3, `rounds ${result.rounds}`);

    const runs = await readPod('runs');
    assert.equal(runs?.status?.phase, 'Running');
    assert.ok(runs?.status?.podIP);
    assert.ok(runs?.status?.containerStatuses?.[0]?.state?.running);
    assert.equal(runs?.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(runs?.status?.qosClass, 'BestEffort', 'the qosClass the API server set is kept');
    assert.equal((await readPod('finishes'))?.status?.phase, 'Succeeded');
    const fails = await readPod('fails');
    assert.equal(fails?.status?.phase, 'Failed');
    assert.equal(fails?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);

    // Nothing changed in the provider: a whole further invocation writes nothing.
    const before = runs?.metadata?.resourceVersion;
    await statusInvocation();
    assert.equal((await readPod('runs'))?.metadata?.resourceVersion, before);
  });

  it('with pod-sync writing statuses at once and pod-status polling meanwhile, each plain pod gets one status write', async (t) => {
    const names = Array.from({ length: 8 }, (_, i) => `once-${i}`);
    // Status writes (PATCH) of this process (pod-sync and pod-status both run in it), by pod: a write
    // whose content equals the stored status changes no resourceVersion, so a watch could not see it.
    const puts = new Map<string, number>();
    const prefix = `/api/v1/namespaces/${namespace}/pods/`;
    const onRequest = (message: unknown) => {
      if (typeof message !== 'object' || message === null || !('request' in message)) return;
      const { method, path } = message.request as ClientRequest;
      const match = path.startsWith(prefix) ? /^([^/?]+)\/status/.exec(path.slice(prefix.length)) : null;
      if (method === 'PATCH' && match?.[1]) puts.set(match[1], (puts.get(match[1]) ?? 0) + 1);
    };
    subscribe('http.client.request.start', onRequest);
    t.after(() => unsubscribe('http.client.request.start', onRequest));

    // pod-status polls every second while the pods are created and synced, and for a whole invocation after.
    const polling = statusInvocation();
    for (const name of names) await createPod(name);
    const synced = await Promise.all(names.map((name) => sync(name)));
    assert.deepEqual(
      synced.map((r) => r.outcome),
      names.map(() => 'created'),
    );
    assert.equal((await polling).role, 'holder');
    const after = await statusInvocation();
    assert.ok(after.role === 'holder' && after.rounds >= 3, `rounds ${after.rounds}`);

    for (const name of names) {
      const pod = await readPod(name);
      assert.equal(pod?.status?.phase, 'Running', name);
      assert.equal(puts.get(name), 1, `${name}: status writes`);
      const reported = await provider.getPod(namespace, name);
      assert.equal(
        (await knownPods.get(node, namespace, name))?.statusHash,
        podStatusHash(reported?.status),
        `${name}: recorded as written`,
      );
    }
  });

  it('reports a pod the provider lost as Failed/NotFound, as virtual-kubelet does', async () => {
    await createPod('lost');
    await sync('lost');
    await statusInvocation();
    const running = await readPod('lost');
    assert.equal(running?.status?.phase, 'Running');
    assert.ok(running);
    await provider.deletePod(running);
    await statusInvocation();
    const lost = await readPod('lost');
    assert.equal(lost?.status?.phase, 'Failed');
    assert.equal(lost?.status?.reason, 'NotFound');
    assert.equal(lost?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, -137);
    assert.equal((await sync('lost', 'MODIFIED')).outcome, 'skipped-terminal');
  });

  it('a terminating pod: terminated status once the provider is done, then force-deleted by the event of that status only', async () => {
    // It ignores SIGTERM: the provider holds it until its grace period ends, so pod-sync cannot report it terminated.
    await createPod('leaving', { grace: 3, command: ['sh', '-c', "trap '' TERM; sleep 3600"] });
    await sync('leaving');
    await statusInvocation();
    await admin.core.deleteNamespacedPod({ namespace, name: 'leaving', gracePeriodSeconds: 3 });
    assert.equal((await sync('leaving', 'MODIFIED')).outcome, 'deleted-in-provider');
    const leaving = await readPod('leaving');
    assert.ok(leaving);
    assert.notEqual(leaving.status?.phase, 'Succeeded', 'still running');
    // Its process ends now, before the grace period does (as one that handles SIGTERM slowly
    // would): else pod-status's force delete at the grace period's end may come first, the
    // provider stopping it only at the end of a grace period that began when pod-sync deleted it.
    await provider.deletePod({
      ...leaving,
      metadata: { ...leaving.metadata, deletionGracePeriodSeconds: 0 },
    });
    await waitFor(
      async () => {
        await statusInvocation();
        return (await readPod('leaving'))?.status?.phase === 'Succeeded';
      },
      { timeoutMs: 30_000, what: 'pod-status to report the pod terminated once the provider stopped it' },
    );
    // Reported terminated, and the grace period ended meanwhile: the force delete is left to pod-sync.
    assert.ok((await knownPods.get(node, namespace, 'leaving'))?.handedOffUntil);
    assert.equal((await sync('leaving', 'MODIFIED')).outcome, 'force-deleted');
    assert.equal(await readPod('leaving'), undefined);
    assert.equal(await knownPods.get(node, namespace, 'leaving'), undefined);
  });

  it('deletes dangling provider pods of our nodes only, and forgets records of pods that are gone', async () => {
    const ghost = (name: string, nodeName: string): V1Pod => ({
      metadata: { namespace, name, uid: randomUUID() },
      spec: { nodeName, containers: [{ name: 'app', image: 'busybox:1.36' }] },
    });
    await provider.createPod(ghost('ghost', node));
    await provider.createPod(ghost('elsewhere', otherNode));
    await knownPods.put(
      { node, namespace, name: 'forgotten', uid: randomUUID(), appliedHash: 'h' },
      undefined,
    );
    await statusInvocation();
    assert.ok(
      (await mockPodRecord(table, namespace, 'ghost'))?.deletedAt !== undefined,
      'dangling pod deleted',
    );
    assert.equal(
      (await mockPodRecord(table, namespace, 'elsewhere'))?.deletedAt,
      undefined,
      'other node untouched',
    );
    assert.equal(await knownPods.get(node, namespace, 'forgotten'), undefined);
  });

  it('one holder at a time', async () => {
    const results = await Promise.all([statusInvocation(), statusInvocation()]);
    assert.deepEqual(results.map((r) => r.role).sort(), ['holder', 'standby']);
  });
});
