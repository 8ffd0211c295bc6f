import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { after, describe, it } from 'node:test';
import {
  createKubeClients,
  isConflict,
  isForbidden,
  isNotFound,
  loadKubeConfig,
} from '../../lib/kube/client.ts';
import { MicroTime } from '../../lib/kube/micro-time.ts';
import { createToolingClients, toolingContext } from '../../lib/kube/tooling-clients.ts';
import { testEnv } from '../support/env.ts';

const LEASE_NAMESPACE = 'kube-node-lease';

describe('Kubernetes client as the virtual kubelet, against the real API server', () => {
  const env = testEnv();
  const kubelet = createKubeClients(toolingContext(env.kube.kubeletKubeconfig));
  const admin = createToolingClients(env.kube.adminKubeconfig);
  const suffix = randomBytes(4).toString('hex');
  const nodeName = `svk-client-test-${suffix}`;
  const renewTime = new MicroTime(Date.now());
  // The same identity with client-node's whole API, for the calls the virtual kubelet never makes.
  const kubeletTools = createToolingClients(env.kube.kubeletKubeconfig);

  after(async () => {
    await ignoreNotFound(
      admin.coordination.deleteNamespacedLease({ name: nodeName, namespace: LEASE_NAMESPACE }),
    );
    await ignoreNotFound(admin.core.deleteNode({ name: nodeName }));
  });

  it('creates a Node and reads it back', async () => {
    await kubelet.core.createNode({
      body: {
        metadata: { name: nodeName, labels: { type: 'virtual-kubelet', 'kubernetes.io/role': 'agent' } },
        spec: { taints: [{ key: 'virtual-kubelet.io/provider', value: 'mock', effect: 'NoSchedule' }] },
      },
    });

    const node = await kubelet.core.readNode({ name: nodeName });
    assert.equal(node.metadata?.name, nodeName);
    assert.equal(node.metadata?.labels?.type, 'virtual-kubelet');
    assert.equal(node.metadata?.labels?.['kubernetes.io/role'], 'agent');
    // The node lifecycle controller may add its own taints; ours must be there.
    const taint = node.spec?.taints?.find((t) => t.key === 'virtual-kubelet.io/provider');
    assert.deepEqual(
      { ...taint },
      { key: 'virtual-kubelet.io/provider', value: 'mock', effect: 'NoSchedule' },
    );
    assert.ok(node.metadata?.uid);
  });

  it('creates the Node’s Lease in kube-node-lease, owned by the Node, and reads it back', async () => {
    const node = await kubelet.core.readNode({ name: nodeName });
    const uid = node.metadata?.uid;
    assert.ok(uid);
    await kubelet.coordination.createNamespacedLease({
      namespace: LEASE_NAMESPACE,
      body: {
        metadata: {
          name: nodeName,
          namespace: LEASE_NAMESPACE,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid }],
        },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: 40, renewTime },
      },
    });

    const lease = await kubelet.coordination.readNamespacedLease({
      name: nodeName,
      namespace: LEASE_NAMESPACE,
    });
    assert.equal(lease.spec?.holderIdentity, nodeName);
    assert.equal(lease.spec?.leaseDurationSeconds, 40);
    // A MicroTime goes out with microseconds and comes back as the wire string (as client-node's did); new Date() reads both.
    const readBack = lease.spec?.renewTime;
    assert.ok(readBack);
    assert.equal(new Date(readBack).getTime(), renewTime.getTime());
    assert.deepEqual(
      lease.metadata?.ownerReferences?.map((o) => ({ kind: o.kind, name: o.name, uid: o.uid })),
      [{ kind: 'Node', name: nodeName, uid }],
    );
  });

  it('classifies a second create as Conflict and a missing object as NotFound', async () => {
    await assert.rejects(
      kubelet.coordination.createNamespacedLease({
        namespace: LEASE_NAMESPACE,
        body: { metadata: { name: nodeName }, spec: { holderIdentity: nodeName } },
      }),
      (err) => isConflict(err),
    );
    await assert.rejects(kubelet.core.readNode({ name: `${nodeName}-missing` }), (err) => isNotFound(err));
  });

  it('reads the same Node through an inline kubeconfig', async () => {
    const inline = createKubeClients(
      await loadKubeConfig({ kubeconfigYaml: readFileSync(env.kube.kubeletKubeconfig, 'utf8') }),
    );
    const node = await inline.core.readNode({ name: nodeName });
    assert.equal(node.metadata?.name, nodeName);
  });

  it('is forbidden from listing Secrets cluster-wide', async () => {
    await assert.rejects(kubeletTools.core.listSecretForAllNamespaces(), (err) => isForbidden(err));
  });

  it('is forbidden from deleting a Namespace, which stays', async () => {
    const name = `svk-forbidden-${suffix}`;
    await admin.core.createNamespace({ body: { metadata: { name } } });
    try {
      await assert.rejects(kubeletTools.core.deleteNamespace({ name }), (err) => isForbidden(err));
      const ns = await admin.core.readNamespace({ name });
      assert.equal(ns.status?.phase, 'Active');
    } finally {
      await ignoreNotFound(admin.core.deleteNamespace({ name }));
    }
  });

  it('is forbidden from writing Leases outside kube-node-lease', async () => {
    await assert.rejects(
      kubelet.coordination.createNamespacedLease({
        namespace: 'default',
        body: { metadata: { name: nodeName }, spec: { holderIdentity: nodeName } },
      }),
      (err) => isForbidden(err),
    );
  });

  it('deletes its own Lease and Node (the reconciler removes nodes dropped from the configuration)', async () => {
    await kubelet.coordination.deleteNamespacedLease({ name: nodeName, namespace: LEASE_NAMESPACE });
    await kubelet.core.deleteNode({ name: nodeName });
    await assert.rejects(
      admin.coordination.readNamespacedLease({ name: nodeName, namespace: LEASE_NAMESPACE }),
      (err) => isNotFound(err),
    );
    await assert.rejects(admin.core.readNode({ name: nodeName }), (err) => isNotFound(err));
  });
});

/**
 * Counts the answered requests to `pathPrefix` and how many of them opened a
 * new connection (the client's `reusedSocket`), as node:http reports them.
 */
function connectionCounter(pathPrefix: string) {
  const counts = { requests: 0, newConnections: 0 };
  const onResponse = (message: unknown) => {
    if (typeof message !== 'object' || message === null || !('request' in message)) return;
    const request = message.request as ClientRequest;
    if (!request.path.startsWith(pathPrefix)) return;
    counts.requests++;
    if (!request.reusedSocket) counts.newConnections++;
  };
  subscribe('http.client.response.finish', onResponse);
  return { counts, stop: () => unsubscribe('http.client.response.finish', onResponse) };
}

describe('Kubernetes client connections', () => {
  const env = testEnv();
  const kc = toolingContext(env.kube.adminKubeconfig);

  it('reuses one kept-alive connection for sequential requests', async () => {
    const clients = createKubeClients(kc);
    const counter = connectionCounter('/api/v1/namespaces/kube-system');
    try {
      for (let i = 0; i < 20; i++) await clients.core.readNamespace({ name: 'kube-system' });
    } finally {
      counter.stop();
    }
    assert.deepEqual(counter.counts, { requests: 20, newConnections: 1 });
  });

  it('opens a new connection instead of reusing one idle for longer than the limit', async () => {
    let now = 0;
    const { core } = createKubeClients(
      await loadKubeConfig(
        { kubeconfigPath: env.kube.adminKubeconfig },
        { keepAlive: { maxIdleMs: 1_000, now: () => now } },
      ),
    );
    const counter = connectionCounter('/api/v1/namespaces/default');
    try {
      await core.readNamespace({ name: 'default' });
      now += 1_000;
      await core.readNamespace({ name: 'default' });
      assert.deepEqual(
        counter.counts,
        { requests: 2, newConnections: 1 },
        'idle for exactly the limit: reused',
      );
      now += 1_001;
      await core.readNamespace({ name: 'default' });
      assert.deepEqual(counter.counts, { requests: 3, newConnections: 2 }, 'idle past the limit: a new one');
    } finally {
      counter.stop();
    }
  });
});

async function ignoreNotFound(request: Promise<unknown>): Promise<void> {
  try {
    await request;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
