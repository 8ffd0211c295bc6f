/**
 * The whole pod pipeline on the real control plane (scheduler, ReplicaSet,
 * Deployment, Job and garbage-collector controllers): heartbeat, pod-watch,
 * pod-sync behind the in-process event bus, pod-status, and the mock
 * provider in DynamoDB Local. One virtual node serves every scenario, as in a
 * real cluster; each scenario works in its own namespace.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  BatchV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { systemClock } from '../../lib/clock.ts';
import { isNotFound } from '../../lib/kube/client.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import {
  MOCK_EXIT_CODE_ANNOTATION,
  MOCK_FINISH_AFTER_ANNOTATION,
} from '../../lib/provider/mock/mock-pod-plan.ts';
import { MockPodProvider, mockPodRecord } from '../../lib/provider/mock/mock-pods.ts';
import type { StateTable } from '../../lib/state/dynamodb.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  freshTable,
  functionEnv,
  functionKubeconfigs,
  readNode,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const admin = adminClients();
const appsApi = admin.config.makeApiClient(AppsV1Api);
const batchApi = admin.config.makeApiClient(BatchV1Api);

let node = '';
let table: StateTable;
let deployment: LocalDeployment;
const namespaces: string[] = [];

function podSpec(extra: Partial<V1PodSpec> = {}): V1PodSpec {
  return {
    nodeSelector: { 'kubernetes.io/hostname': node },
    tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
    containers: [{ name: 'app', image: 'registry.example/app:1' }],
    ...extra,
  };
}

/** A namespace of this file, removed afterwards. */
async function namespace(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  namespaces.push(name);
  await createTestNamespace(admin, name);
  return name;
}

async function listPods(ns: string): Promise<V1Pod[]> {
  return (await admin.core.listNamespacedPod({ namespace: ns })).items;
}

async function readPod(ns: string, name: string): Promise<V1Pod | undefined> {
  try {
    return await admin.core.readNamespacedPod({ namespace: ns, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

before(async () => {
  const fresh = await freshTable();
  table = fresh.table;
  node = uniqueName('pipe');
  deployment = new LocalDeployment({
    env: functionEnv(fresh.name, { SVK_NODE_NAMES: node }),
    // Each function as its own user (infra/rbac.yaml).
    kubeconfigs: functionKubeconfigs(),
    rateMs: 20_000,
    timeoutMs: 45_000,
    syncRetryDelayMs: 1_000,
  });
  deployment.start();
  await waitFor(
    async () => {
      const n = await readNode(admin, node);
      const notReadyTaint = n?.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready');
      return readyStatus(n) === 'True' && !notReadyTaint;
    },
    { timeoutMs: 60_000, what: `${node} Ready and schedulable` },
  );
});

after(async () => {
  await deployment?.stop({ abortRunning: true });
  await Promise.all(namespaces.map((name) => admin.core.deleteNamespace({ name }).catch(() => undefined)));
  await deleteNodeAndLease(admin, node);
});

describe('pod pipeline against the real control plane', () => {
  it('runs a Deployment of 50 replicas to available, then scales it to 0 and forgets every pod', {
    timeout: 10 * 60_000,
  }, async () => {
    const ns = await namespace('deploy');
    await appsApi.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 50,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: podSpec() },
        },
      },
    });
    const available = await waitFor(
      async () => {
        const d = await appsApi.readNamespacedDeployment({ namespace: ns, name: 'web' });
        return d.status?.availableReplicas === 50 ? d : undefined;
      },
      { timeoutMs: 5 * 60_000, intervalMs: 1_000, what: 'the Deployment to have 50 available replicas' },
    );
    assert.equal(available.status?.readyReplicas, 50);
    const pods = await listPods(ns);
    assert.equal(pods.length, 50);
    for (const pod of pods) {
      assert.equal(pod.spec?.nodeName, node);
      assert.equal(pod.status?.phase, 'Running');
      assert.match(pod.status?.podIP ?? '', /^10\./, 'podIP written by us from the provider');
      const record = await mockPodRecord(table, ns, pod.metadata?.name ?? '');
      assert.equal(record?.creates, 1, `${pod.metadata?.name} created once in the provider`);
    }

    await appsApi.patchNamespacedDeploymentScale(
      { namespace: ns, name: 'web', body: [{ op: 'replace', path: '/spec/replicas', value: 0 }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await waitFor(async () => (await listPods(ns)).length === 0, {
      timeoutMs: 3 * 60_000,
      intervalMs: 1_000,
      what: 'every pod to be gone from the API server',
    });
    const provider = new MockPodProvider({ table, clock: systemClock });
    await waitFor(
      async () => (await provider.listPods(node)).filter((p) => p.metadata?.namespace === ns).length === 0,
      {
        timeoutMs: 30_000,
        what: 'every pod to be gone from the provider',
      },
    );
    await waitFor(
      async () => (await new KnownPodStore(table).list(node)).filter((k) => k.namespace === ns).length === 0,
      { timeoutMs: 30_000, what: 'every known-pod record to be forgotten' },
    );
  });

  it('deletes a pod with a 30 s grace period through the provider, and a new pod of the same name keeps running', {
    timeout: 5 * 60_000,
  }, async () => {
    const ns = await namespace('grace');
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'p' }, spec: podSpec({ terminationGracePeriodSeconds: 30 }) },
    });
    const running = await waitFor(
      async () => {
        const p = await readPod(ns, 'p');
        return p?.status?.phase === 'Running' ? p : undefined;
      },
      { timeoutMs: 90_000, what: 'pod p Running' },
    );
    const oldUid = running.metadata?.uid;
    const deletedAt = Date.now();
    await admin.core.deleteNamespacedPod({ namespace: ns, name: 'p' });
    await waitFor(async () => (await mockPodRecord(table, ns, 'p'))?.deletedAt !== undefined, {
      timeoutMs: 30_000,
      what: 'the provider to be told to delete p',
    });
    const providerToldAfter = Date.now() - deletedAt;
    await waitFor(async () => (await readPod(ns, 'p'))?.metadata?.uid !== oldUid, {
      timeoutMs: 60_000,
      what: 'the API object to go after the provider reported termination',
    });
    assert.ok(
      providerToldAfter < 30_000,
      `provider told after ${providerToldAfter} ms, within the grace period`,
    );

    await admin.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'p' }, spec: podSpec() },
    });
    const second = await waitFor(
      async () => {
        const p = await readPod(ns, 'p');
        return p?.status?.phase === 'Running' && p.metadata?.uid !== oldUid ? p : undefined;
      },
      { timeoutMs: 90_000, what: 'the new pod p Running' },
    );
    // Let status polls and any late work for the old pod pass, then check the new one is untouched.
    await waitFor(async () => (await mockPodRecord(table, ns, 'p'))?.uid === second.metadata?.uid, {
      timeoutMs: 30_000,
      what: 'the provider to run the new pod',
    });
    const still = await readPod(ns, 'p');
    assert.equal(still?.metadata?.uid, second.metadata?.uid);
    assert.equal(still?.metadata?.deletionTimestamp, undefined);
    assert.equal(
      (await mockPodRecord(table, ns, 'p'))?.deletedAt,
      undefined,
      'the new pod runs in the provider',
    );
  });

  it('completes a Job whose pod the provider finishes, and fails a restartPolicy Never pod with its exit code', {
    timeout: 5 * 60_000,
  }, async () => {
    const ns = await namespace('job');
    await batchApi.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'once' },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { annotations: { [MOCK_FINISH_AFTER_ANNOTATION]: '3' } },
            spec: podSpec({ restartPolicy: 'Never' }),
          },
        },
      },
    });
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: {
          name: 'fails',
          annotations: { [MOCK_FINISH_AFTER_ANNOTATION]: '3', [MOCK_EXIT_CODE_ANNOTATION]: '3' },
        },
        spec: podSpec({ restartPolicy: 'Never' }),
      },
    });
    const job = await waitFor(
      async () => {
        const j = await batchApi.readNamespacedJob({ namespace: ns, name: 'once' });
        return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')
          ? j
          : undefined;
      },
      { timeoutMs: 3 * 60_000, intervalMs: 1_000, what: 'the Job to complete' },
    );
    assert.equal(job.status?.succeeded, 1);
    const failed = await waitFor(
      async () => {
        const p = await readPod(ns, 'fails');
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 90_000, what: 'pod fails to be Failed' },
    );
    assert.equal(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);
  });

  it('creates each pod once when every event is delivered twice and batches arrive in reverse', {
    timeout: 5 * 60_000,
  }, async () => {
    const ns = await namespace('dup');
    deployment.bus.duplicate = 2;
    deployment.bus.reorder = 'reverse';
    try {
      for (let i = 0; i < 8; i++) {
        await admin.core.createNamespacedPod({
          namespace: ns,
          body: { metadata: { name: `d${i}` }, spec: podSpec() },
        });
      }
      await waitFor(
        async () => (await listPods(ns)).filter((p) => p.status?.phase === 'Running').length === 8,
        { timeoutMs: 2 * 60_000, intervalMs: 1_000, what: '8 pods Running' },
      );
    } finally {
      deployment.bus.duplicate = 1;
      deployment.bus.reorder = 'none';
    }
    for (let i = 0; i < 8; i++) {
      const record = await mockPodRecord(table, ns, `d${i}`);
      assert.equal(record?.creates, 1, `d${i} created once`);
      assert.equal(record?.deletes, 0);
    }
    assert.ok(deployment.bus.deliveries.length > 0);
  });

  it('never touches pods bound to another node', { timeout: 3 * 60_000 }, async () => {
    const ns = await namespace('other');
    const other = uniqueName('not-ours');
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'elsewhere' },
        spec: { ...podSpec(), nodeSelector: undefined, nodeName: other },
      },
    });
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'ours' }, spec: podSpec() },
    });
    await waitFor(async () => (await readPod(ns, 'ours'))?.status?.phase === 'Running', {
      timeoutMs: 90_000,
      what: 'our pod Running',
    });
    const elsewhere = await readPod(ns, 'elsewhere');
    assert.equal(elsewhere?.status?.phase, 'Pending');
    assert.equal(elsewhere?.status?.podIP, undefined);
    assert.equal(await mockPodRecord(table, ns, 'elsewhere'), undefined, 'not in the provider');
    assert.equal(await new KnownPodStore(table).get(other, ns, 'elsewhere'), undefined, 'not known');
    assert.ok(
      !deployment.bus.published.some((e) => JSON.stringify(e).includes('"name":"elsewhere"')),
      'no event published for it',
    );
  });
});
