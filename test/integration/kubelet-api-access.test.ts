/**
 * Who may reach the kubelet API, on the loopback front (a kubelet's TLS
 * listener: client certificate asked for, not required) and the real API server's TokenReview and
 * SubjectAccessReview: no certificate, a certificate of another CA, a
 * cluster-CA certificate the SubjectAccessReview denies, the kubelet's
 * subresource mapping, pods of another node or of no node of ours, and the
 * bearer-token path (the handler invoked without a front, as a front without
 * mutual TLS would).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import parsePrometheus from 'parse-prometheus-text-format';
import { createKubeletApiHandler } from '../../functions/kubelet-api.ts';
import { loadKubeConfig } from '../../lib/kube/client.ts';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { type LocalKubeletApi, startLocalKubeletApi } from '../../lib/local/local-kubelet-api.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  asKubeletApi,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  uniqueName,
} from '../support/kube.ts';
import {
  frontGet,
  frontSource,
  invokeStreaming,
  issuePem,
  newCertificateAuthority,
  type PemPair,
} from '../support/kubelet-api.ts';

const env = testEnv();
const admin = adminClients(env);
const rbac = admin.config.makeApiClient(RbacAuthorizationV1Api);
const dir = mkdtempSync(join(tmpdir(), 'svk-kubelet-access-'));
const ca = readFileSync(env.kube.ca.cert, 'utf8');
const clusterCa = CertificateAuthority.open(dirname(env.kube.ca.cert));
const nodeA = uniqueName('kapi-a');
const nodeB = uniqueName('kapi-b');
const ns = uniqueName('kapi-access');
const statsReader = uniqueName('stats-reader');
// Bound like the system:metrics-server ClusterRole's kubelet part: nodes/metrics only.
const metricsScraper = uniqueName('metrics-scraper');

let api: LocalKubeletApi;
let functionEnvironment: Record<string, string | undefined>;
let certs: Record<'admin' | 'nobody' | 'stats' | 'metrics' | 'foreign', PemPair>;

const address = (node: string) => api.addresses[node] ?? '';
const get = (node: string, path: string, cert?: PemPair, host?: string) =>
  frontGet(address(node), api.port, path, {
    ca,
    ...(cert ? { cert: cert.cert, key: cert.key } : {}),
    ...(host ? { host } : {}),
  });

function pod(name: string, nodeName: string) {
  return {
    metadata: { name },
    spec: { nodeName, containers: [{ name: 'main', image: 'busybox', command: ['echo', 'secret'] }] },
  };
}

before(async () => {
  const { name: table } = await freshTable(env);
  functionEnvironment = functionEnv(table, { SVK_NODE_NAMES: `${nodeA},${nodeB}` }, env);
  api = await startLocalKubeletApi({
    env: functionEnvironment,
    kubeconfig: env.kube.kubeletApiKubeconfig,
    nodes: [nodeA, nodeB],
    ca: clusterCa,
    dir,
  });
  const issue = (name: string, commonName: string, organizations: string[] = [], issuer = clusterCa) =>
    issuePem(issuer, dir, name, { commonName, organizations, usage: 'client' });
  const foreignCa = await newCertificateAuthority(dir, 'foreign-ca');
  certs = {
    admin: await issue('admin', 'kapi-admin', ['system:masters']),
    nobody: await issue('nobody', 'nobody'),
    stats: await issue('stats', statsReader),
    metrics: await issue('metrics', metricsScraper),
    foreign: await issue('foreign', 'kapi-admin', ['system:masters'], foreignCa),
  };
  for (const [user, resource] of [
    [statsReader, 'nodes/stats'],
    [metricsScraper, 'nodes/metrics'],
  ] as const) {
    await rbac.createClusterRole({
      body: { metadata: { name: user }, rules: [{ apiGroups: [''], resources: [resource], verbs: ['get'] }] },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: user },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  }
  await createTestNamespace(admin, ns);
  for (const [name, node] of [
    ['on-a', nodeA],
    ['on-b', nodeB],
    ['elsewhere', 'not-a-node-of-ours'],
  ] as const) {
    await admin.core.createNamespacedPod({ namespace: ns, body: pod(name, node) });
  }
});

after(async () => {
  await api?.stop();
  await deleteTestNamespace(admin, ns);
  for (const name of [statsReader, metricsScraper]) {
    await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
    await rbac.deleteClusterRole({ name }).catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('kubelet API access on the loopback front', () => {
  it('answers a cluster-CA certificate the API server authorizes', async () => {
    assert.deepEqual(await get(nodeA, '/healthz', certs.admin), { status: 200, body: 'ok\n' });
  });

  it('refuses a request without a client certificate or token as a kubelet does: 401, no data', async () => {
    assert.deepEqual(await get(nodeA, '/pods', undefined), { status: 401, body: 'Unauthorized\n' });
  });

  it('refuses a certificate of another CA as a kubelet does: 401, no data', async () => {
    assert.deepEqual(await get(nodeA, '/pods', certs.foreign), { status: 401, body: 'Unauthorized\n' });
  });

  it('takes a bearer token the API server authenticates without a client certificate, as metrics-server sends', async () => {
    const token = (await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig })).token ?? '';
    const answer = await frontGet(address(nodeA), api.port, '/pods', {
      ca,
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(
      JSON.parse(answer.body).items.map((p: { metadata: { name: string } }) => p.metadata.name),
      ['on-a'],
    );
  });

  it('refuses a cluster-CA certificate whose identity the SubjectAccessReview denies', async () => {
    const answer = await get(nodeA, '/pods', certs.nobody);
    assert.deepEqual(answer, {
      status: 403,
      body: 'Forbidden (user=nobody, verb=get, resource=nodes, subresource=proxy)\n',
    });
  });

  it('maps paths to subresources as the kubelet: nodes/stats reads stats, not pods or logs', async () => {
    const stats = await get(nodeA, '/stats/summary', certs.stats);
    assert.equal(stats.status, 200, stats.body);
    assert.equal(JSON.parse(stats.body).node.nodeName, nodeA);
    const pods = await get(nodeA, '/pods', certs.stats);
    assert.equal(pods.status, 403);
    assert.match(pods.body, /subresource=proxy/);
    const logs = await get(nodeA, `/containerLogs/${ns}/on-a/main`, certs.stats);
    assert.equal(logs.status, 403);
    const metrics = await get(nodeA, '/metrics/resource', certs.stats);
    assert.equal(metrics.status, 403);
    assert.match(metrics.body, /subresource=metrics/);
  });

  it('lets a metrics-server identity scrape /metrics/resource directly, with its client certificate', async () => {
    const scrape = await get(nodeB, '/metrics/resource', certs.metrics);
    assert.equal(scrape.status, 200, scrape.body);
    const families = parsePrometheus(scrape.body).map((f) => f.name);
    assert.ok(families.includes('node_cpu_usage_seconds_total'), scrape.body);
    assert.ok(families.includes('scrape_error'));
    assert.equal((await get(nodeB, '/stats/summary', certs.metrics)).status, 403);
    assert.equal((await get(nodeB, '/pods', certs.metrics)).status, 403);
  });

  it('refuses, in its own code, a pod of another node and a pod of no node of ours', async () => {
    const other = await get(nodeA, `/containerLogs/${ns}/on-b/main`, certs.admin);
    assert.deepEqual(other, { status: 404, body: `pod "on-b" does not exist on node "${nodeA}"\n` });
    const foreign = await get(nodeA, `/containerLogs/${ns}/elsewhere/main`, certs.admin);
    assert.equal(foreign.status, 404);
    assert.ok(!foreign.body.includes('secret'));
    const podsOfA = JSON.parse((await get(nodeA, '/pods', certs.admin)).body);
    assert.deepEqual(
      podsOfA.items.map((p: { metadata: { name: string } }) => p.metadata.name),
      ['on-a'],
    );
  });

  it('tells the node by the address connected to, not by the Host header (the API server proxy sends its own)', async () => {
    const answer = await get(nodeA, '/pods', certs.admin, `127.0.0.1:6443`);
    assert.equal(answer.status, 200);
    assert.deepEqual(
      JSON.parse(answer.body).items.map((p: { metadata: { name: string } }) => p.metadata.name),
      ['on-a'],
    );
  });

  it('refuses exec, attach and port-forward at once, saying why', async () => {
    for (const path of [
      `/exec/${ns}/on-a/main?command=ls`,
      `/attach/${ns}/on-a/main`,
      `/portForward/${ns}/on-a`,
    ]) {
      const answer = await get(nodeA, path, certs.admin);
      assert.equal(answer.status, 501, path);
      const status = JSON.parse(answer.body);
      assert.equal(status.kind, 'Status');
      assert.match(status.message, /not supported .* cannot carry the upgraded/);
    }
  });
});

describe('kubelet API authentication in the handler itself', () => {
  const handler = () => createKubeletApiHandler(asKubeletApi(functionEnvironment, env));
  const event = (headers: Record<string, string>, path = '/healthz') => ({
    httpMethod: 'GET',
    path,
    headers: { Host: `${address(nodeA)}:${api.port}`, ...headers },
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    requestContext: {
      requestId: 'test',
      ...frontSource(functionEnvironment),
      identity: { clientCert: null },
    },
  });

  it('takes a bearer token the API server authenticates (TokenReview)', async () => {
    const token = (await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig })).token ?? '';
    assert.ok(token);
    assert.deepEqual(await invokeStreaming(handler(), event({ Authorization: `Bearer ${token}` })), {
      status: 200,
      body: 'ok\n',
    });
  });

  it('refuses an unknown token and a request with neither token nor certificate: 401', async () => {
    const h = handler();
    assert.deepEqual(await invokeStreaming(h, event({ Authorization: 'Bearer not-a-token' })), {
      status: 401,
      body: 'Unauthorized\n',
    });
    assert.deepEqual(await invokeStreaming(h, event({})), { status: 401, body: 'Unauthorized\n' });
  });

  it('answers a domain that names no node of ours with 404', async () => {
    const token = (await loadKubeConfig({ kubeconfigPath: env.kube.adminKubeconfig })).token ?? '';
    const answer = await invokeStreaming(handler(), {
      ...event({ Authorization: `Bearer ${token}`, Host: 'elsewhere.example.com' }),
    });
    assert.deepEqual(answer, {
      status: 404,
      body: 'no node of this deployment answers at elsewhere.example.com\n',
    });
  });

  it('serves an event only from its own API and stage: a certificate in any other event proves nothing', async () => {
    // The cluster-admin's certificate, as anyone allowed to invoke the function could put it in an event.
    const withCert = (requestContext: Record<string, unknown>) => ({
      ...event({}, '/pods'),
      requestContext: {
        requestId: 'trust',
        ...requestContext,
        identity: { clientCert: { clientCertPem: certs.admin.cert } },
      },
    });
    const ours = frontSource(functionEnvironment);
    const h = handler();
    const served = await invokeStreaming(h, withCert(ours));
    assert.equal(served.status, 200, served.body);
    const refused = { status: 403, body: 'Forbidden: this request did not come through the kubelet API\n' };
    assert.deepEqual(await invokeStreaming(h, withCert({})), refused, 'no API named');
    assert.deepEqual(
      await invokeStreaming(h, withCert({ ...ours, apiId: 'a1b2c3d4e5' })),
      refused,
      'another API',
    );
    assert.deepEqual(
      await invokeStreaming(h, withCert({ ...ours, stage: 'test' })),
      refused,
      'another stage',
    );
  });

  it('answers an event that is not a REST API proxy event with 400 naming what is wrong', async () => {
    const answer = await invokeStreaming(handler(), { path: '/healthz' });
    assert.equal(answer.status, 400);
    assert.match(answer.body, /httpMethod/);
  });
});
