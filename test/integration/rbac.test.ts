/**
 * infra/rbac.yaml on the real RBAC-enforcing API server, as each of its two
 * identities: the control loop's (the kubeconfig every function of the
 * integration suite but the kubelet API runs with) and the kubelet API's
 * own: what each may do, asked through SelfSubjectAccessReview, and what it
 * must not do, asked and then attempted for real.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AuthorizationV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1ResourceAttributes,
} from '@kubernetes/client-node';
import { apiStatusCode, isForbidden } from '../../lib/kube/client.ts';
import { createToolingClients } from '../../lib/kube/tooling-clients.ts';
import { NODE_LEASE_NAMESPACE } from '../../lib/node/node-lease.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  readNode,
  uniqueName,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
// The virtual kubelet's identity with client-node's whole API: what RBAC refuses, asked for real.
const kubelet = createToolingClients(env.kube.kubeletKubeconfig);
const authz = kubelet.config.makeApiClient(AuthorizationV1Api);
const kubeletRbac = kubelet.config.makeApiClient(RbacAuthorizationV1Api);
// The kubelet API's own identity, the same way.
const kubeletApi = createToolingClients(env.kube.kubeletApiKubeconfig);
const apiAuthz = kubeletApi.config.makeApiClient(AuthorizationV1Api);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const ns = uniqueName('rbac');
const otherNode = uniqueName('rbac-other');
const ownNode = uniqueName('rbac-own');

async function allowed(attributes: V1ResourceAttributes, as = authz): Promise<boolean> {
  const review = await as.createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: attributes } },
  });
  return review.status?.allowed === true;
}

/** Runs a real request as the kubelet and requires 403. */
async function forbidden(what: string, request: () => Promise<unknown>): Promise<void> {
  try {
    await request();
  } catch (err) {
    assert.ok(isForbidden(err), `${what}: expected 403, got ${apiStatusCode(err) ?? String(err)}`);
    return;
  }
  assert.fail(`${what}: the virtual kubelet was allowed to do it`);
}

before(async () => {
  await createTestNamespace(admin, ns);
  await admin.core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'db' }, stringData: { password: 'hunter2' } },
  });
  // A pod bound to a node that is not ours, and a node that is not ours.
  await admin.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: 'web' },
      spec: { nodeName: otherNode, containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    },
  });
  await admin.core.createNode({ body: { metadata: { name: otherNode } } });
});

after(async () => {
  await deleteTestNamespace(admin, ns);
  await deleteNodeAndLease(admin, otherNode);
  await deleteNodeAndLease(admin, ownNode);
});

describe('RBAC of the virtual kubelet identity (infra/rbac.yaml)', () => {
  it('may do what the functions need', async () => {
    const needed: V1ResourceAttributes[] = [
      { resource: 'nodes', verb: 'create' },
      { resource: 'nodes', verb: 'get' },
      { resource: 'nodes', verb: 'patch' },
      { resource: 'nodes', verb: 'delete' },
      { resource: 'nodes', subresource: 'status', verb: 'patch' },
      { resource: 'namespaces', verb: 'get' },
      { resource: 'namespaces', verb: 'create' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'get' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'create' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'update' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'delete' },
      { resource: 'pods', verb: 'list' },
      { resource: 'pods', verb: 'watch' },
      { resource: 'pods', namespace: ns, verb: 'get' },
      { resource: 'pods', namespace: ns, verb: 'delete' },
      { resource: 'pods', subresource: 'status', namespace: ns, verb: 'patch' },
      { resource: 'events', namespace: ns, verb: 'create' },
      { resource: 'events', namespace: ns, verb: 'patch' },
      { resource: 'configmaps', namespace: ns, verb: 'get' },
      { resource: 'secrets', namespace: ns, verb: 'get' },
      // Projected serviceAccountToken volumes: a token of the pod's service account, bound to the pod.
      { resource: 'serviceaccounts', subresource: 'token', namespace: ns, verb: 'create' },
      // Service links: the Services of the pod's namespace, and `kubernetes` in `default`.
      { resource: 'services', namespace: ns, verb: 'list' },
      { resource: 'services', namespace: 'default', verb: 'list' },
    ];
    for (const attributes of needed)
      assert.equal(await allowed(attributes), true, JSON.stringify(attributes));

    // And for real: register a node, give it a lease, read a referenced Secret by name.
    await kubelet.core.createNode({ body: { metadata: { name: ownNode } } });
    assert.ok(await readNode(kubelet, ownNode));
    await kubelet.coordination.createNamespacedLease({
      namespace: NODE_LEASE_NAMESPACE,
      body: { metadata: { name: ownNode }, spec: { holderIdentity: ownNode, leaseDurationSeconds: 40 } },
    });
    const secret = await kubelet.core.readNamespacedSecret({ namespace: ns, name: 'db' });
    assert.ok(secret.data?.password);
  });

  it('must not do anything else', async () => {
    const refused: V1ResourceAttributes[] = [
      { resource: 'secrets', verb: 'list' },
      { resource: 'secrets', verb: 'watch' },
      { resource: 'secrets', namespace: ns, verb: 'list' },
      { resource: 'secrets', namespace: ns, verb: 'update' },
      { resource: 'configmaps', verb: 'list' },
      { resource: 'services', namespace: ns, verb: 'get' },
      { resource: 'services', namespace: ns, verb: 'watch' },
      { resource: 'services', namespace: ns, verb: 'create' },
      { resource: 'pods', namespace: ns, verb: 'create' },
      { resource: 'pods', namespace: ns, verb: 'update' },
      { resource: 'pods', namespace: ns, verb: 'patch' },
      { resource: 'pods', subresource: 'exec', namespace: ns, verb: 'create' },
      { resource: 'pods', subresource: 'eviction', namespace: ns, verb: 'create' },
      { resource: 'nodes', verb: 'update' },
      { resource: 'nodes', verb: 'list' },
      { resource: 'nodes', verb: 'watch' },
      { resource: 'nodes', subresource: 'status', verb: 'update' },
      { resource: 'pods', subresource: 'status', namespace: ns, verb: 'update' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'list' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system', verb: 'create' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system', verb: 'update' },
      { resource: 'namespaces', verb: 'delete' },
      { resource: 'serviceaccounts', namespace: ns, verb: 'get' },
      { resource: 'serviceaccounts', namespace: ns, verb: 'list' },
      { resource: 'serviceaccounts', namespace: ns, verb: 'create' },
      { group: 'apps', resource: 'deployments', namespace: ns, verb: 'create' },
      { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verb: 'create' },
      { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'escalate' },
      { group: 'events.k8s.io', resource: 'events', namespace: ns, verb: 'create' },
      // It answers for kubelets; it never calls one itself.
      { resource: 'nodes', subresource: 'proxy', verb: 'get' },
      { resource: 'nodes', subresource: 'log', verb: 'get' },
      { group: 'authorization.k8s.io', resource: 'localsubjectaccessreviews', namespace: ns, verb: 'create' },
      // The kubelet API's reviews are its own identity's, not the control loop's.
      { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
      { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verb: 'create' },
    ];
    const wrongly: string[] = [];
    for (const attributes of refused) if (await allowed(attributes)) wrongly.push(JSON.stringify(attributes));
    assert.deepEqual(wrongly, []);
  });

  it('is refused for real: secrets in bulk, pod writes, leases elsewhere, RBAC', async () => {
    await forbidden('list Secrets cluster-wide', () => kubelet.core.listSecretForAllNamespaces());
    await forbidden('list Secrets in a namespace', () =>
      kubelet.core.listNamespacedSecret({ namespace: ns }),
    );
    await forbidden('create a pod', () =>
      kubelet.core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name: 'intruder' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      }),
    );
    await forbidden('change a pod spec', () =>
      kubelet.core.patchNamespacedPod(
        { namespace: ns, name: 'web', body: { spec: { activeDeadlineSeconds: 1 } } },
        mergePatch,
      ),
    );
    await forbidden('relabel a pod', () =>
      kubelet.core.patchNamespacedPod(
        { namespace: ns, name: 'web', body: { metadata: { labels: { owned: 'yes' } } } },
        mergePatch,
      ),
    );
    await forbidden('write a lease outside kube-node-lease', () =>
      kubelet.coordination.createNamespacedLease({
        namespace: 'kube-system',
        body: { metadata: { name: uniqueName('rbac') }, spec: { holderIdentity: 'x' } },
      }),
    );
    await forbidden('bind itself to cluster-admin', () =>
      kubeletRbac.createClusterRoleBinding({
        body: {
          metadata: { name: uniqueName('rbac') },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [
            { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'serverless-virtual-kubelet' },
          ],
        },
      }),
    );
    // Nothing of it happened.
    const pod = await admin.core.readNamespacedPod({ namespace: ns, name: 'web' });
    assert.equal(pod.spec?.activeDeadlineSeconds, undefined);
    assert.equal(pod.metadata?.labels?.owned, undefined);
  });
});

describe('RBAC of the kubelet API identity (infra/rbac.yaml)', () => {
  it('may review tokens and access, and read pods and nodes: every call of lib/kubelet-api', async () => {
    const needed: V1ResourceAttributes[] = [
      { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
      { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verb: 'create' },
      { resource: 'pods', verb: 'list' },
      { resource: 'pods', namespace: ns, verb: 'list' },
      { resource: 'pods', namespace: ns, verb: 'get' },
      { resource: 'nodes', verb: 'get' },
    ];
    for (const attributes of needed)
      assert.equal(await allowed(attributes, apiAuthz), true, JSON.stringify(attributes));
    // And for real: a node's pods by field selector, a pod, a node, a TokenReview.
    const pods = await kubeletApi.core.listPodForAllNamespaces({
      fieldSelector: `spec.nodeName=${otherNode}`,
    });
    assert.deepEqual(
      pods.items.map((p) => p.metadata?.name),
      ['web'],
    );
    assert.ok(await kubeletApi.core.readNamespacedPod({ namespace: ns, name: 'web' }));
    assert.ok(await readNode(kubeletApi, otherNode));
    const review = await kubeletApi.authentication.createTokenReview({
      body: { spec: { token: 'not-a-token' } },
    });
    assert.equal(review.status?.authenticated ?? false, false);
  });

  it('must not read a Secret or a ConfigMap, nor write anything', async () => {
    const refused: V1ResourceAttributes[] = [
      { resource: 'secrets', namespace: ns, verb: 'get' },
      { resource: 'secrets', verb: 'list' },
      { resource: 'configmaps', namespace: ns, verb: 'get' },
      { resource: 'pods', verb: 'watch' },
      { resource: 'pods', namespace: ns, verb: 'delete' },
      { resource: 'pods', namespace: ns, verb: 'create' },
      { resource: 'pods', namespace: ns, verb: 'patch' },
      { resource: 'pods', subresource: 'status', namespace: ns, verb: 'update' },
      { resource: 'pods', subresource: 'exec', namespace: ns, verb: 'create' },
      { resource: 'pods', subresource: 'log', namespace: ns, verb: 'get' },
      { resource: 'nodes', verb: 'list' },
      { resource: 'nodes', verb: 'watch' },
      { resource: 'nodes', verb: 'create' },
      { resource: 'nodes', verb: 'patch' },
      { resource: 'nodes', verb: 'delete' },
      { resource: 'nodes', subresource: 'status', verb: 'patch' },
      { resource: 'nodes', subresource: 'proxy', verb: 'get' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'get' },
      { group: 'coordination.k8s.io', resource: 'leases', namespace: NODE_LEASE_NAMESPACE, verb: 'update' },
      { resource: 'events', namespace: ns, verb: 'create' },
      { resource: 'services', namespace: ns, verb: 'list' },
      { resource: 'namespaces', verb: 'create' },
      { resource: 'serviceaccounts', subresource: 'token', namespace: ns, verb: 'create' },
      { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verb: 'create' },
    ];
    const wrongly: string[] = [];
    for (const attributes of refused)
      if (await allowed(attributes, apiAuthz)) wrongly.push(JSON.stringify(attributes));
    assert.deepEqual(wrongly, []);
    await forbidden('read a Secret by name', () =>
      kubeletApi.core.readNamespacedSecret({ namespace: ns, name: 'db' }),
    );
    await forbidden('delete a pod', () =>
      kubeletApi.core.deleteNamespacedPod({ namespace: ns, name: 'web' }),
    );
    await forbidden('delete a node', () => kubeletApi.core.deleteNode({ name: otherNode }));
    await forbidden('patch a node', () =>
      kubeletApi.core.patchNode(
        { name: otherNode, body: { metadata: { labels: { owned: 'yes' } } } },
        mergePatch,
      ),
    );
    assert.ok(await admin.core.readNamespacedPod({ namespace: ns, name: 'web' }), 'the pod is still there');
    const node = await readNode(admin, otherNode);
    assert.ok(node && node.metadata?.labels?.owned === undefined, 'the node is still there, unchanged');
  });
});
