/**
 * `npm start` on a cluster it did not start, as a new user runs it: a
 * second control plane that this test starts the way kubeadm would (its own
 * CA, which signs the API server's kubelet client certificate and is the CA
 * of the kubeconfig; the `kubernetes` Service's endpoints kept by the lease
 * reconciler; `--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname`;
 * and `--kubelet-certificate-authority`, so the API server verifies the
 * serving certificate the kubelet API gets through a CSR), then `npm start`
 * with only KUBECONFIG pointing at it and the docker provider on the run's
 * engine. Two shapes:
 * - the API server on this host (kubeadm on this machine): the kubelet API on loopback;
 * - the API server in a network namespace of its own behind a bridge,
 *   reached through a loopback port-forward (kind's shape): the kubelet API
 *   on the host's address on that bridge, which the API server dials from
 *   inside the namespace.
 * Each with the real kubectl v1.20.2: logs (-c, --tail, -f, --previous), the
 * node proxy (pods, stats/summary, metrics/resource), a metrics-server-style
 * scrape with a service-account token, and the refusals at the front.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { load } from 'js-yaml';
import parsePrometheus from 'parse-prometheus-text-format';
import { createToolingClients, type ToolingClients } from '../../lib/kube/tooling-clients.ts';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { type ControlPlane, startControlPlane } from '../../lib/local/control-plane.ts';
import { clusterServingDir } from '../../lib/local/kubelet-api/joined-cluster.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { containerStatus, TEST_IMAGE, testEngine } from '../support/docker.ts';
import { testEnv } from '../support/env.ts';
import { readLease, readNode, readyStatus, uniqueName, waitFor } from '../support/kube.ts';
import {
  frontGet,
  issuePem,
  kubectl,
  kubectlStreaming,
  newCertificateAuthority,
  type PemPair,
} from '../support/kubelet-api.ts';
import { createTestNetns, forwardLoopback, type PortForward, type TestNetns } from '../support/netns.ts';
import { KEPT_SERVING_DIR, type NpmStart, npmStart, startLine, stopNpmStart } from '../support/npm-start.ts';

const env = testEnv();
const docker = testEngine(env);

/** This host's address on its default route and that route's device: what a kubeadm API server here advertises. */
function defaultRouteAddress(): { address: string; device: string } | undefined {
  const routes: unknown = JSON.parse(execFileSync('ip', ['-j', 'route', 'show', 'default']).toString());
  const first: unknown = Array.isArray(routes) ? routes[0] : undefined;
  const device = typeof first === 'object' && first !== null && 'dev' in first ? String(first.dev) : '';
  const address = networkInterfaces()[device]?.find((a) => a.family === 'IPv4' && !a.internal)?.address;
  return address ? { address, device } : undefined;
}

/** The kubeconfig at `path` with its server replaced by `server`, written to `into` (JSON is YAML). */
function kubeconfigAt(path: string, server: string, into: string): string {
  const config = load(readFileSync(path, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
  for (const { cluster } of config.clusters) cluster.server = server;
  writeFileSync(into, JSON.stringify(config), { mode: 0o600 });
  return into;
}

/** Counts its lives in the pod's emptyDir: the first prints a line and fails, the second prints and stays. */
const CRASH = `if [ -e /state/crashed ]; then echo "life 2"; while true; do sleep 1; done; fi
touch /state/crashed; echo "life 1"; exit 1`;
const MAIN = `echo "main: hello"; i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done`;
const FOLLOW = `echo start; i=0; while [ $i -lt 80 ]; do echo "tick $i"; i=$((i+1)); sleep 0.25; done; echo end`;

function joinedClusterSuite(shape: 'host' | 'netns'): void {
  const dir = mkdtempSync(join(tmpdir(), `svk-joined-${shape}-`));
  const node = uniqueName(`joined-${shape}`);
  const ns = uniqueName('joined');
  let netns: TestNetns | undefined;
  let forward: PortForward | undefined;
  let cp: ControlPlane | undefined;
  let kubeconfig = '';
  let admin: ToolingClients;
  let kept: string | undefined;
  let start: NpmStart | undefined;
  let clusterCa = '';
  let certs: Record<'admin' | 'nobody' | 'foreign', PemPair>;
  /** The node's kubelet API as it publishes it. */
  let place = { address: '', port: 0 };

  const run = (args: string[], timeoutMs = 60_000) =>
    kubectl(args, timeoutMs, { ...env, kube: { ...env.kube, adminKubeconfig: kubeconfig } });
  const logs = (...args: string[]) => run(['logs', '-n', ns, 'talk', ...args]);
  const raw = (path: string) => run(['get', '--raw', `/api/v1/nodes/${node}/proxy${path}`]);
  const front = (path: string, cert?: PemPair, headers: Record<string, string> = {}) =>
    frontGet(place.address, place.port, path, {
      ca: clusterCa,
      headers,
      ...(cert ? { cert: cert.cert, key: cert.key } : {}),
    });
  const readPod = (name: string): Promise<V1Pod> => admin.core.readNamespacedPod({ namespace: ns, name });

  /** The address the host-shaped API server advertises, when this host has a default route. */
  const host = shape === 'host' ? defaultRouteAddress() : undefined;

  before(async () => {
    if (shape === 'netns') netns = await createTestNetns();
    cp = await startControlPlane({
      dir: join(dir, 'control-plane'),
      scheduler: false,
      readyTimeoutMs: 180_000,
      ...(netns ? { address: netns.address, launcher: netns.launcher } : {}),
      apiServerArgs: [
        '--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname',
        ...(netns || host ? ['--endpoint-reconciler-type=lease'] : []),
        ...(host ? [`--advertise-address=${host.address}`] : []),
      ],
    });
    kubeconfig = cp.adminKubeconfig;
    if (netns) {
      forward = await forwardLoopback(netns.address, cp.ports.apiServer);
      kubeconfig = kubeconfigAt(
        cp.adminKubeconfig,
        `https://127.0.0.1:${forward.port}`,
        join(dir, 'forwarded.kubeconfig'),
      );
    }
    admin = createToolingClients(kubeconfig);
    kept = clusterServingDir(KEPT_SERVING_DIR, admin.context.server, admin.context.ca);
    clusterCa = readFileSync(cp.ca.cert, 'utf8');
    const ca = CertificateAuthority.open(dirname(cp.ca.cert));
    const foreignCa = await newCertificateAuthority(dir, 'foreign-ca');
    const issue = (name: string, commonName: string, organizations: string[], issuer = ca) =>
      issuePem(issuer, dir, name, { commonName, organizations, usage: 'client' });
    certs = {
      admin: await issue('admin', 'joined-admin', ['system:masters']),
      nobody: await issue('nobody', 'nobody', []),
      foreign: await issue('foreign', 'joined-admin', ['system:masters'], foreignCa),
    };
    await admin.core.createNamespace({ body: { metadata: { name: ns } } });
    start = npmStart({
      KUBECONFIG: kubeconfig,
      SVK_DYNAMODB_ENDPOINT: env.dynamodb.endpoint,
      AWS_REGION: env.dynamodb.region,
      SVK_TABLE_NAME: uniqueName('svk-joined'),
      SVK_NODE_NAMES: node,
      SVK_PROVIDER: 'docker',
      SVK_DOCKER_HOST: env.docker.host,
      SVK_DOCKER_NETWORK: env.docker.network,
      SVK_POD_STATUS_INTERVAL_SECONDS: '1',
      SVK_LOG_LEVEL: 'info',
    });
    const s = start;
    await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
      timeoutMs: 120_000,
      what: `${node} Ready; npm start said:\n${s.stderr.join('\n')}`,
    });
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'talk' },
        spec: {
          nodeName: node,
          restartPolicy: 'Always',
          volumes: [{ name: 'state', emptyDir: {} }],
          containers: [
            { name: 'main', image: TEST_IMAGE, command: ['sh', '-c', MAIN] },
            {
              name: 'crash',
              image: TEST_IMAGE,
              command: ['sh', '-c', CRASH],
              volumeMounts: [{ name: 'state', mountPath: '/state' }],
            },
          ],
        },
      },
    });
  });

  after(async () => {
    if (start) {
      const code = await stopNpmStart(start);
      if (code !== 0) process.stderr.write(`npm start ended with ${code}:\n${start.stderr.join('\n')}\n`);
    }
    await forward?.close();
    // The serving certificate npm start kept for this cluster, which is gone with it.
    if (kept) rmSync(kept, { recursive: true, force: true });
    await cp?.stop();
    await netns?.remove();
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${LABELS.namespace}=${ns}`] },
    });
    for (const c of left)
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('chooses where the API server can reach it, says why, and publishes it as the node’s address and port', async () => {
    const s = start as NpmStart;
    const chosen = await startLine(s, /^\[start\] kubelet API on /);
    if (netns) {
      assert.equal(
        chosen,
        `[start] kubelet API on ${netns.hostAddress}: the API server advertises ${netns.address}; the host's address on bridge ${netns.bridge}: it runs in a container`,
      );
    } else if (host) {
      assert.equal(
        chosen,
        `[start] kubelet API on loopback: the API server advertises ${host.address}, this host's address on ${host.device}: it runs here`,
      );
    } else
      assert.match(chosen, /^\[start\] kubelet API on loopback: the kubeconfig's server is at 127\.0\.0\.1/);
    const published = await readNode(admin, node);
    const addresses = published?.status?.addresses ?? [];
    assert.equal(addresses.length, 1, JSON.stringify(addresses));
    assert.equal(addresses[0]?.type, 'InternalIP');
    place = {
      address: addresses[0]?.address ?? '',
      port: published?.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0,
    };
    if (netns) assert.equal(place.address, netns.hostAddress);
    else assert.match(place.address, /^127\./);
    await startLine(
      s,
      new RegExp(`^\\[start\\] kubelet API \\(kubectl logs\\): ${node} at ${place.address}:${place.port}$`),
    );
  });

  it('serves a certificate the cluster signer issued through a CSR that npm start approved', async () => {
    const s = start as NpmStart;
    const line = await startLine(s, new RegExp(`^\\[start\\] ${node}: serving certificate from `));
    const name =
      /CertificateSigningRequest (\S+) \(kubernetes\.io\/kubelet-serving, approved by npm start\)/.exec(
        line,
      )?.[1];
    assert.ok(name, line);
    const csr = await admin.certificates.readCertificateSigningRequest({ name });
    assert.equal(csr.spec.signerName, 'kubernetes.io/kubelet-serving');
    assert.ok(csr.status?.conditions?.some((c) => c.type === 'Approved' && c.status === 'True'));
    assert.ok(csr.status?.certificate);
    // The front's certificate verifies against the cluster CA for the node's address (the GET would fail otherwise).
    const healthz = await front('/healthz', certs.admin);
    assert.deepEqual(healthz, { status: 200, body: 'ok\n' });
  });

  it('kubectl logs: -c, --tail, --previous of a restarted container, through the API server', async () => {
    await waitFor(
      async () => {
        const pod = await readPod('talk');
        const crash = containerStatus(pod, 'crash');
        return (
          (crash?.restartCount ?? 0) >= 1 &&
          !!crash?.state?.running &&
          !!containerStatus(pod, 'main')?.state?.running
        );
      },
      { timeoutMs: 120_000, intervalMs: 500, what: 'talk running, its crash container restarted once' },
    );
    const main = await waitFor(
      async () => {
        const out = await logs('-c', 'main');
        return out.code === 0 && out.stdout.includes('tick 1\n') ? out.stdout : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'two ticks of main' },
    );
    assert.ok(main.startsWith('main: hello\ntick 0\ntick 1\n'), main);
    const tail = await logs('-c', 'main', '--tail=1');
    assert.equal(tail.code, 0, tail.stderr);
    assert.match(tail.stdout, /^tick \d+\n$/);
    const previous = await logs('-c', 'crash', '--previous');
    assert.deepEqual([previous.code, previous.stdout], [0, 'life 1\n'], previous.stderr);
    const current = await logs('-c', 'crash');
    assert.deepEqual([current.code, current.stdout], [0, 'life 2\n'], current.stderr);
  });

  it('kubectl logs -f streams the lines as they are written, to the container’s end', async () => {
    await admin.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'follow' },
        spec: {
          nodeName: node,
          restartPolicy: 'Never',
          containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', FOLLOW] }],
        },
      },
    });
    await waitFor(async () => !!containerStatus(await readPod('follow'), 'main')?.state?.running, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: 'follow running',
    });
    const following = kubectlStreaming(['logs', '-f', '-n', ns, 'follow'], 90_000, {
      ...env,
      kube: { ...env.kube, adminKubeconfig: kubeconfig },
    });
    await waitFor(() => following.stdout().includes('tick 3\n'), {
      timeoutMs: 30_000,
      what: 'the first ticks through the follow',
    });
    assert.ok(!following.stdout().includes('end\n'), 'lines arrive while the container still runs');
    const ended = await following.ended;
    const ticks = Array.from({ length: 80 }, (_, i) => `tick ${i}\n`).join('');
    assert.deepEqual([ended.code, ended.stdout], [0, `start\n${ticks}end\n`], ended.stderr);
  });

  it('the node proxy: /pods, /stats/summary and /metrics/resource', async () => {
    const pods = await raw('/pods');
    assert.equal(pods.code, 0, pods.stderr);
    const names = JSON.parse(pods.stdout).items.map((p: V1Pod) => p.metadata?.name);
    assert.deepEqual(names.sort(), ['follow', 'talk']);
    const summary = await raw('/stats/summary');
    assert.equal(summary.code, 0, summary.stderr);
    const parsed = JSON.parse(summary.stdout);
    assert.equal(parsed.node.nodeName, node);
    const talk = parsed.pods.find((p: { podRef: { name: string } }) => p.podRef.name === 'talk');
    assert.deepEqual(talk?.containers.map((c: { name: string }) => c.name).sort(), ['crash', 'main']);
    const metrics = await raw('/metrics/resource');
    assert.equal(metrics.code, 0, metrics.stderr);
    const families = parsePrometheus(metrics.stdout);
    const cpu = families.find((f) => f.name === 'container_cpu_usage_seconds_total');
    assert.ok(
      cpu?.metrics.some((m) => m.labels?.pod === 'talk' && m.labels.container === 'main'),
      metrics.stdout,
    );
  });

  it('a metrics-server-style scrape: a service account’s bearer token, allowed nodes/metrics only', async () => {
    const rbac = admin.config.makeApiClient(RbacAuthorizationV1Api);
    const role = `${ns}-scraper`;
    await admin.core.createNamespacedServiceAccount({
      namespace: ns,
      body: { metadata: { name: 'scraper' } },
    });
    await rbac.createClusterRole({
      body: {
        metadata: { name: role },
        rules: [{ apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: role },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: ns }],
      },
    });
    const token = await waitFor(
      async () => {
        const sa = await admin.core.readNamespacedServiceAccount({ namespace: ns, name: 'scraper' });
        const secret = sa.secrets?.[0]?.name;
        if (!secret) return undefined;
        const data = (await admin.core.readNamespacedSecret({ namespace: ns, name: secret })).data?.token;
        return data ? Buffer.from(data, 'base64').toString('utf8') : undefined;
      },
      { timeoutMs: 30_000, what: 'the scraper service account token' },
    );
    const bearer = { authorization: `Bearer ${token}` };
    const scrape = await front('/metrics/resource', undefined, bearer);
    assert.equal(scrape.status, 200, scrape.body);
    assert.ok(parsePrometheus(scrape.body).some((f) => f.name === 'node_cpu_usage_seconds_total'));
    const pods = await front('/pods', undefined, bearer);
    assert.equal(pods.status, 403);
    assert.match(
      pods.body,
      new RegExp(
        `^Forbidden \\(user=system:serviceaccount:${ns}:scraper, verb=get, resource=nodes, subresource=proxy\\)`,
      ),
    );
  });

  it('refuses strangers with the kubelet’s codes, leaks nothing, and the heartbeat goes on', async () => {
    const refusals = [
      [await front('/pods'), 401],
      [await front('/pods', certs.foreign), 401],
      [await front(`/containerLogs/${ns}/talk/main`, certs.foreign), 401],
      [await front('/pods', certs.nobody), 403],
      [await front(`/containerLogs/${ns}/talk/main`, certs.nobody), 403],
    ] as const;
    for (const [answer, status] of refusals) {
      assert.equal(answer.status, status, answer.body);
      assert.ok(!/talk|tick|life/.test(answer.body), answer.body);
    }
    assert.equal(refusals[0][0].body, 'Unauthorized\n');
    assert.equal(
      refusals[3][0].body,
      'Forbidden (user=nobody, verb=get, resource=nodes, subresource=proxy)\n',
    );
    assert.equal((await front('/configz', certs.admin)).status, 404);
    const badQuery = await front(`/containerLogs/${ns}/talk/main?tailLines=-1`, certs.admin);
    assert.equal(badQuery.status, 400);
    assert.match(badQuery.body, /tailLines must be at least 0/);
    assert.equal((await front(`/containerLogs/${ns}/talk/main/extra`, certs.admin)).status, 400);

    const after = Date.now();
    await waitFor(
      async () => {
        const lease = await readLease(admin, node);
        const renewed = lease?.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
        return renewed > after && readyStatus(await readNode(admin, node)) === 'True';
      },
      {
        timeoutMs: 60_000,
        intervalMs: 1_000,
        what: `${node}'s lease renewed after the refusals, the node Ready`,
      },
    );
  });

  it('stops on SIGINT with exit code 0', async () => {
    const s = start as NpmStart;
    start = undefined;
    assert.equal(await stopNpmStart(s), 0, s.stderr.join('\n'));
  });
}

describe(
  'npm start on a kubeadm-shaped cluster whose API server runs on this host',
  { timeout: 15 * 60_000 },
  () => joinedClusterSuite('host'),
);

describe(
  'npm start on a cluster whose API server runs in a network namespace behind a bridge (kind’s shape)',
  {
    timeout: 15 * 60_000,
  },
  () => joinedClusterSuite('netns'),
);
