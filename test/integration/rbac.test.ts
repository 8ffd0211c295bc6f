/**
 * infra/rbac.yaml on the real RBAC-enforcing API server, as each of its
 * identities: the control loop's shared one (the kubeconfig of a deployment
 * with one kubeconfig, and of the integration suites' functions), the
 * kubelet API's own, and each control-loop function's own user
 * (`serverless-virtual-kubelet:<function>`, EKS's access entries and the
 * local pipeline's kubeconfigs): what each may do, asked through
 * SelfSubjectAccessReview (the two with a kubeconfig) or a
 * SubjectAccessReview by the admin (the functions' users, without any
 * group), and what it must not do, asked and then attempted for real (the
 * functions' users through the admin's impersonation).
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
import { FUNCTION_USERS, functionUser } from '../../lib/local/control-plane/credentials.ts';
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

// Each function's own user: what its code calls (docs/security.md, "Which function calls what").
const lease = (verb: string): V1ResourceAttributes => ({
  group: 'coordination.k8s.io',
  resource: 'leases',
  namespace: NODE_LEASE_NAMESPACE,
  verb,
});
const nodeConfig = (verb: string): V1ResourceAttributes => ({
  resource: 'configmaps',
  namespace: 'kube-system',
  name: 'serverless-virtual-kubelet-node-config',
  verb,
});
const pod = (verb: string, subresource?: string): V1ResourceAttributes => ({
  resource: 'pods',
  namespace: ns,
  verb,
  ...(subresource ? { subresource } : {}),
});
const inNs = (resource: string, verb: string, subresource?: string): V1ResourceAttributes => ({
  resource,
  namespace: ns,
  verb,
  ...(subresource ? { subresource } : {}),
});
const nodes = (verb: string, subresource?: string): V1ResourceAttributes => ({
  resource: 'nodes',
  verb,
  ...(subresource ? { subresource } : {}),
});

const HEARTBEAT = [
  nodes('get'),
  nodes('create'),
  nodes('patch'),
  nodes('patch', 'status'),
  lease('get'),
  lease('create'),
  lease('update'),
  nodeConfig('get'),
];
const POD_WATCH = [
  { resource: 'pods', verb: 'list' },
  { resource: 'pods', verb: 'watch' },
  { resource: 'pods', namespace: NODE_LEASE_NAMESPACE, verb: 'list' },
  { resource: 'namespaces', name: 'kube-system', verb: 'get' },
];
/** A pod's own work, pod-sync's and pod-status's alike: the pod, its status, its Events, its env and volume references. */
const POD_WORK = [
  pod('get'),
  pod('delete'),
  pod('patch', 'status'),
  inNs('events', 'create'),
  inNs('events', 'patch'),
  inNs('configmaps', 'get'),
  inNs('secrets', 'get'),
  inNs('serviceaccounts', 'create', 'token'),
];
/** pod-sync's calls: a pod's work and its service links. */
const POD_SYNC = [
  ...POD_WORK,
  inNs('services', 'list'),
  { resource: 'services', namespace: 'default', verb: 'list' },
];
const POD_STATUS = [{ resource: 'pods', verb: 'list' }, ...POD_WORK];
const RECONCILE = [
  { resource: 'namespaces', name: NODE_LEASE_NAMESPACE, verb: 'get' },
  { resource: 'namespaces', verb: 'create' },
  nodes('get'),
  nodes('create'),
  nodes('patch'),
  nodes('delete'),
  nodes('patch', 'status'),
  lease('get'),
  lease('create'),
  lease('update'),
  lease('delete'),
  { resource: 'pods', verb: 'list' },
  ...POD_SYNC,
];
const ECS_TASK_STATE = [pod('get'), pod('patch', 'status')];

/** The heartbeat's node and lease rights, which only it, reconcile and the tick hold. */
const NODES_AND_LEASE = [
  nodes('get'),
  nodes('create'),
  nodes('patch'),
  nodes('delete'),
  nodes('patch', 'status'),
  lease('get'),
  lease('update'),
];

/**
 * What each function's user may do, and chosen things it must not (each some other function's).
 * pod-sync's, pod-status's and reconcile's `get` of ConfigMaps by name (pod env and volumes)
 * covers the node config's too (RBAC cannot tell them apart); its watch is the heartbeat's only.
 */
const FUNCTION_RIGHTS: Record<string, { may: V1ResourceAttributes[]; mustNot: V1ResourceAttributes[] }> = {
  heartbeat: {
    may: HEARTBEAT,
    mustNot: [
      nodes('delete'),
      lease('delete'),
      pod('get'),
      pod('delete'),
      { resource: 'pods', verb: 'list' },
      pod('patch', 'status'),
      inNs('secrets', 'get'),
      inNs('configmaps', 'get'),
      inNs('events', 'create'),
      inNs('serviceaccounts', 'create', 'token'),
      { resource: 'namespaces', verb: 'create' },
    ],
  },
  'pod-watch': {
    may: POD_WATCH,
    mustNot: [
      pod('get'),
      pod('delete'),
      pod('patch', 'status'),
      inNs('secrets', 'get'),
      inNs('configmaps', 'get'),
      inNs('events', 'create'),
      inNs('services', 'list'),
      ...NODES_AND_LEASE,
      lease('delete'),
      { resource: 'namespaces', verb: 'create' },
      nodeConfig('get'),
    ],
  },
  'pod-sync': {
    may: POD_SYNC,
    mustNot: [
      { resource: 'pods', verb: 'list' },
      { resource: 'pods', verb: 'watch' },
      ...NODES_AND_LEASE,
      { resource: 'namespaces', verb: 'get' },
      { resource: 'namespaces', verb: 'create' },
      nodeConfig('watch'),
    ],
  },
  'pod-status': {
    may: POD_STATUS,
    mustNot: [
      { resource: 'pods', verb: 'watch' },
      inNs('services', 'list'),
      ...NODES_AND_LEASE,
      lease('delete'),
      { resource: 'namespaces', verb: 'create' },
      nodeConfig('watch'),
    ],
  },
  reconcile: {
    may: RECONCILE,
    mustNot: [{ resource: 'pods', verb: 'watch' }, nodeConfig('watch'), nodes('update'), nodes('list')],
  },
  'ecs-task-state': {
    may: ECS_TASK_STATE,
    mustNot: [
      pod('delete'),
      { resource: 'pods', verb: 'list' },
      inNs('secrets', 'get'),
      inNs('configmaps', 'get'),
      inNs('events', 'create'),
      inNs('serviceaccounts', 'create', 'token'),
      inNs('services', 'list'),
      ...NODES_AND_LEASE,
      lease('delete'),
      { resource: 'namespaces', verb: 'get' },
    ],
  },
  tick: {
    may: [...HEARTBEAT, ...POD_WATCH, ...POD_STATUS, ...RECONCILE],
    mustNot: [],
  },
};

/** Whether `user` alone (no group) may do it, asked by the admin. */
async function userAllowed(user: string, attributes: V1ResourceAttributes): Promise<boolean> {
  const review = await admin.authorization.createSubjectAccessReview({
    body: { spec: { user, resourceAttributes: attributes } },
  });
  return review.status?.allowed === true;
}

/** The admin's request options that send it as `user` (Impersonate-User), without any group. */
const as = (user: string) => setHeaderOptions('Impersonate-User', user);

describe("RBAC of each control-loop function's own user (infra/rbac.yaml)", () => {
  it('covers every function with a user: the six and the tick', () => {
    assert.deepEqual(Object.keys(FUNCTION_RIGHTS).sort(), [...FUNCTION_USERS].sort());
  });

  for (const [fn, rights] of Object.entries(FUNCTION_RIGHTS)) {
    const user = functionUser(fn);
    it(`${user} may make every call of ${fn}, and none of the others chosen`, async () => {
      const missing: string[] = [];
      for (const attributes of rights.may)
        if (!(await userAllowed(user, attributes))) missing.push(JSON.stringify(attributes));
      assert.deepEqual(missing, [], `${fn} lacks`);
      const wrongly: string[] = [];
      for (const attributes of rights.mustNot)
        if (await userAllowed(user, attributes)) wrongly.push(JSON.stringify(attributes));
      assert.deepEqual(wrongly, [], `${fn} may, but must not`);
    });
  }

  it("holds no right the shared identity lacks: none of the shared identity's refusals", async () => {
    // Spot checks of what no role gives: every function's user is refused like the shared user.
    const refused: V1ResourceAttributes[] = [
      { resource: 'secrets', verb: 'list' },
      { resource: 'secrets', namespace: ns, verb: 'watch' },
      pod('create'),
      pod('patch'),
      pod('update', 'status'),
      nodes('update'),
      { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verb: 'create' },
      { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
    ];
    const wrongly: string[] = [];
    for (const fn of FUNCTION_USERS)
      for (const attributes of refused)
        if (await userAllowed(functionUser(fn), attributes))
          wrongly.push(`${fn}: ${JSON.stringify(attributes)}`);
    assert.deepEqual(wrongly, []);
  });

  it('is allowed for real what its function does, as the user alone (impersonated)', async () => {
    const podWatch = functionUser('pod-watch');
    const pods = await admin.core.listPodForAllNamespaces(
      { fieldSelector: `spec.nodeName=${otherNode}` },
      as(podWatch),
    );
    assert.deepEqual(
      pods.items.map((p) => p.metadata?.name),
      ['web'],
    );
    assert.ok((await admin.core.readNamespace({ name: 'kube-system' }, as(podWatch))).metadata?.uid);
    const podSync = functionUser('pod-sync');
    const secret = await admin.core.readNamespacedSecret({ namespace: ns, name: 'db' }, as(podSync));
    assert.ok(secret.data?.password);
    const ecs = functionUser('ecs-task-state');
    assert.ok(await admin.core.readNamespacedPod({ namespace: ns, name: 'web' }, as(ecs)));
    const heartbeat = functionUser('heartbeat');
    assert.ok(await admin.core.readNode({ name: otherNode }, as(heartbeat)));
  });

  it('is refused for real what its function does not do (impersonated)', async () => {
    const podWatch = functionUser('pod-watch');
    await forbidden('pod-watch reads a Secret', () =>
      admin.core.readNamespacedSecret({ namespace: ns, name: 'db' }, as(podWatch)),
    );
    await forbidden('pod-watch deletes a pod', () =>
      admin.core.deleteNamespacedPod({ namespace: ns, name: 'web' }, as(podWatch)),
    );
    const ecs = functionUser('ecs-task-state');
    await forbidden('ecs-task-state reads a Secret', () =>
      admin.core.readNamespacedSecret({ namespace: ns, name: 'db' }, as(ecs)),
    );
    await forbidden('ecs-task-state patches a node', () =>
      admin.core.patchNode(
        { name: otherNode, body: { metadata: { labels: { owned: 'yes' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch, as(ecs)),
      ),
    );
    await forbidden('ecs-task-state deletes a node', () =>
      admin.core.deleteNode({ name: otherNode }, as(ecs)),
    );
    await forbidden('ecs-task-state deletes a pod', () =>
      admin.core.deleteNamespacedPod({ namespace: ns, name: 'web' }, as(ecs)),
    );
    const heartbeat = functionUser('heartbeat');
    await forbidden('heartbeat deletes a pod', () =>
      admin.core.deleteNamespacedPod({ namespace: ns, name: 'web' }, as(heartbeat)),
    );
    await forbidden('heartbeat deletes a node', () =>
      admin.core.deleteNode({ name: otherNode }, as(heartbeat)),
    );
    await forbidden('heartbeat reads a Secret', () =>
      admin.core.readNamespacedSecret({ namespace: ns, name: 'db' }, as(heartbeat)),
    );
    const podSync = functionUser('pod-sync');
    await forbidden('pod-sync deletes a node', () => admin.core.deleteNode({ name: otherNode }, as(podSync)));
    await forbidden('pod-sync lists Secrets', () =>
      admin.core.listNamespacedSecret({ namespace: ns }, as(podSync)),
    );
    const podStatus = functionUser('pod-status');
    await forbidden('pod-status patches a node', () =>
      admin.core.patchNode(
        { name: otherNode, body: { metadata: { labels: { owned: 'yes' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch, as(podStatus)),
      ),
    );
    assert.ok(await admin.core.readNamespacedPod({ namespace: ns, name: 'web' }), 'the pod is still there');
    const node = await readNode(admin, otherNode);
    assert.ok(node && node.metadata?.labels?.owned === undefined, 'the node is still there, unchanged');
  });
});
