/**
 * Pod status writes against the real API server with the virtual kubelet's
 * own identity (infra/rbac.yaml): a merge patch from the status read
 * (lib/pod/status/status-patch.ts). A field the read did not show stays as
 * the API server has it (client-node's models drop the fields of an API
 * server newer than them; a PUT of the status read would clear them); a
 * field of a newer API server that we write (`hostIPs`) is dropped by this
 * v1.20 one, not refused; the resourceVersion and the uid read guard the
 * write.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PatchStrategy, setHeaderOptions, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import type { CoreApi } from '../../lib/kube/core-api.ts';
import { podRef, writePodStatus } from '../../lib/pod/status/pod-status-writes.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  kubeletClients,
  uniqueName,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const kubelet = kubeletClients(env);
const namespace = uniqueName('status-patch');
const node = uniqueName('vk-patch');

// The node exists, or the pod garbage collector deletes the pods bound to it.
before(async () => {
  await admin.core.createNode({ body: { metadata: { name: node } } });
  await createTestNamespace(admin, namespace);
});
after(async () => {
  await deleteTestNamespace(admin, namespace);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
});

async function createPod(name: string): Promise<V1Pod> {
  return admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.invalid/app:1' }] },
    },
  });
}

function readPod(name: string): Promise<V1Pod> {
  return admin.core.readNamespacedPod({ namespace, name });
}

const running: V1PodStatus = {
  phase: 'Running',
  hostIP: '10.88.0.1',
  hostIPs: [{ ip: '10.88.0.1' }],
  podIP: '10.88.0.9',
  podIPs: [{ ip: '10.88.0.9' }],
  conditions: [
    { type: 'Initialized', status: 'True' },
    { type: 'Ready', status: 'True' },
    { type: 'ContainersReady', status: 'True' },
    { type: 'PodScheduled', status: 'True' },
  ],
  containerStatuses: [
    {
      name: 'app',
      ready: true,
      restartCount: 0,
      image: 'registry.invalid/app:1',
      imageID: '',
      state: { running: { startedAt: new Date('2026-12-07T01:00:00Z') } },
    },
  ],
};

describe('pod status writes as merge patches', () => {
  it('the API server takes the patch: a condition no longer wanted gone, a field no longer wanted cleared, containers replaced', async () => {
    const created = await createPod('takes');
    const withGate: V1PodStatus = {
      phase: 'Pending',
      message: 'waiting',
      conditions: [{ type: 'example.com/gate', status: 'False' }, ...(running.conditions ?? [])],
    };
    assert.equal(await writePodStatus(kubelet.core, podRef(created), () => withGate), 'written');
    assert.equal(await writePodStatus(kubelet.core, podRef(created), () => running), 'written');
    const status = (await readPod('takes')).status;
    assert.equal(status?.phase, 'Running');
    assert.equal(status?.message, undefined, 'a field no longer wanted is cleared');
    assert.deepEqual(
      status?.conditions?.map((c) => `${c.type}=${c.status}`),
      ['Initialized=True', 'Ready=True', 'ContainersReady=True', 'PodScheduled=True'],
    );
    assert.deepEqual(
      status?.podIPs?.map((p) => p.ip),
      ['10.88.0.9'],
    );
    assert.equal(
      status?.containerStatuses?.[0]?.state?.running?.startedAt?.toISOString(),
      '2026-12-07T01:00:00.000Z',
    );
  });

  it('a field the read did not show stays as the API server has it', async () => {
    const created = await createPod('unseen');
    assert.equal(
      await writePodStatus(kubelet.core, podRef(created), () => ({
        ...running,
        startTime: new Date('2026-12-07T00:59:00Z'),
      })),
      'written',
    );
    // Our reads through a model without `startTime`, as client-node's models lack a newer API server's fields.
    const blind = Object.create(kubelet.core) as CoreApi;
    blind.readNamespacedPod = async (param) => {
      const pod = await kubelet.core.readNamespacedPod(param);
      const { startTime: _unseen, ...status } = pod.status ?? {};
      return { ...pod, status };
    };
    const written = await writePodStatus(blind, podRef(created), (pod) => ({
      ...pod.status,
      message: 'seen',
    }));
    assert.equal(written, 'written');
    const status = (await readPod('unseen')).status;
    assert.equal(status?.message, 'seen');
    assert.equal(status?.startTime?.toISOString(), '2026-12-07T00:59:00.000Z', 'the unseen field is kept');
  });

  it('a write against an older resourceVersion reads again and decides again', async () => {
    const created = await createPod('raced');
    // Another writer changes the status after our read.
    await admin.core.patchNamespacedPodStatus(
      { namespace, name: 'raced', body: { status: { message: 'other writer' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const seen: (string | undefined)[] = [];
    const result = await writePodStatus(
      kubelet.core,
      podRef(created),
      (pod) => {
        seen.push(pod.status?.message);
        return { ...pod.status, phase: 'Running' };
      },
      { pod: created },
    );
    assert.equal(result, 'written');
    assert.deepEqual(seen, [undefined, 'other writer'], 'the first attempt was refused (409) and read again');
    const status = (await readPod('raced')).status;
    assert.equal(status?.phase, 'Running');
    assert.equal(status?.message, 'other writer');
  });

  it('a pod deleted and created again under the same name is not written', async () => {
    const first = await createPod('again');
    await admin.core.deleteNamespacedPod({ namespace, name: 'again', gracePeriodSeconds: 0 });
    const second = await createPod('again');
    assert.notEqual(second.metadata?.uid, first.metadata?.uid);
    assert.equal(await writePodStatus(kubelet.core, podRef(first), () => running, { pod: first }), 'gone');
    assert.equal((await readPod('again')).status?.phase, 'Pending');
  });
});
