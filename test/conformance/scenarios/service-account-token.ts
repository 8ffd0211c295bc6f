import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { V1Volume } from '@kubernetes/client-node';
import { DEFAULT_PROBER_IMAGE } from '../../../lib/provider/docker/settings.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import { testEnv } from '../../support/env.ts';
import { containerStatus } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const execFileAsync = promisify(execFile);
const MINUTE = 60_000;
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * A pod that talks to the real API server as in-cluster clients do: the
 * 1.21+ `kube-api-access-*` volume declared by hand (a projected token, the
 * `kube-root-ca.crt` ConfigMap's `ca.crt`, the namespace), and
 * KUBERNETES_SERVICE_HOST/PORT. With SVK_SLOW_TESTS=1, a 600 s token seen
 * renewed at about 80 % of its lifetime, and the new one working.
 */
export function serviceAccountTokenScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'projected-token',
    "a pod reads its own pod from the API server with its projected token, the cluster CA's ca.crt and KUBERNETES_SERVICE_HOST",
    4 * MINUTE,
    (h) => ownPodRead(h),
  );
  if (process.env.SVK_SLOW_TESTS === '1')
    scenario(
      ctx,
      'projected-token-refresh',
      'a 600 s projected token is renewed after about 480 s (80 % of its lifetime), and the new one works (SVK_SLOW_TESTS=1)',
      14 * MINUTE,
      (h) => tokenRefresh(h),
    );
}

/** The volume a 1.21+ API server's ServiceAccount admission adds, as a pod may declare it itself. */
function kubeApiAccess(expirationSeconds: number): V1Volume {
  return {
    name: 'kube-api-access-hand',
    projected: {
      defaultMode: 0o644,
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  };
}

/** Node's https client reading the pod itself, verifying the server against ca.crt; `then` gets the pod. */
const READ_OWN_POD = `
const fs = require('fs'), https = require('https');
const dir = '${SA_DIR}';
const say = (m, code) => { fs.writeFileSync('/tmp/termination-log', m); process.exit(code); };
const readOwnPod = () => new Promise((resolve, reject) => {
  const ns = fs.readFileSync(dir + '/namespace', 'utf8');
  const req = https.get({
    host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,
    path: '/api/v1/namespaces/' + ns + '/pods/' + process.env.POD_NAME,
    ca: fs.readFileSync(dir + '/ca.crt'),
    headers: { Authorization: 'Bearer ' + fs.readFileSync(dir + '/token', 'utf8') },
    timeout: 10000,
  }, (res) => {
    let body = '';
    res.on('data', (c) => { body += c; });
    res.on('end', () => res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error('HTTP ' + res.statusCode + ' ' + body.slice(0, 300))));
  });
  req.on('error', reject);
  req.on('timeout', () => req.destroy(new Error('timeout')));
});
const claims = (t) => JSON.parse(Buffer.from(t.split('.')[1], 'base64url').toString());
`;

async function grantView(ns: string): Promise<void> {
  // The pod's service account may read the pods of its namespace (the `view` ClusterRole).
  await execFileAsync('kubectl', [
    '--kubeconfig',
    testEnv().kube.adminKubeconfig,
    '-n',
    ns,
    'create',
    'rolebinding',
    'default-view',
    '--clusterrole=view',
    `--serviceaccount=${ns}:default`,
  ]);
}

function clientPod(h: PipelineHarness, script: string, expirationSeconds: number) {
  return {
    metadata: { name: 'client' },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      volumes: [kubeApiAccess(expirationSeconds)],
      containers: [
        {
          name: 'client',
          image: DEFAULT_PROBER_IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '-e', `${READ_OWN_POD}\n${script}`],
          terminationMessagePath: '/tmp/termination-log',
          terminationMessagePolicy: 'FallbackToLogsOnError',
          env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          volumeMounts: [{ name: 'kube-api-access-hand', mountPath: SA_DIR, readOnly: true }],
        },
      ],
    }),
  };
}

async function finished(h: PipelineHarness, ns: string, timeoutMs: number) {
  const done = await h.pods.waitFor(
    ns,
    'client',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs,
      what: 'pod client finished',
    },
  );
  return { pod: done, terminated: containerStatus(done, 'client')?.state?.terminated };
}

async function ownPodRead(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('sa-token');
  await grantView(ns);
  const script = `
readOwnPod().then((pod) => {
  const token = fs.readFileSync(dir + '/token', 'utf8');
  const c = claims(token);
  const mode = (fs.statSync(dir + '/token').mode & 0o777).toString(8);
  const k = c['kubernetes.io'];
  say(['OK', pod.metadata.uid, process.env.KUBERNETES_SERVICE_HOST, (k.warnafter || c.exp) - c.iat, k.pod.uid, mode].join(' '), 0);
}, (err) => say('FAILED ' + err.message, 3));
`;
  await h.pods.create(ns, clientPod(h, script, 3607));
  const { pod, terminated } = await finished(h, ns, 3 * MINUTE);
  assert.equal(terminated?.exitCode, 0, `the pod read itself (${terminated?.message})`);
  const [ok, uid, host, lifetime, boundTo, mode] = (terminated?.message ?? '').split(' ');
  assert.equal(ok, 'OK');
  assert.equal(uid, pod.metadata?.uid, 'the pod read is the pod itself');
  assert.equal(boundTo, pod.metadata?.uid, 'the token is bound to the pod');
  // 3607 s is the 1.21+ admission's value, which the API server extends to a year (warnafter: the time asked for).
  assert.equal(lifetime, '3607', "the token's lifetime is the source's expirationSeconds");
  assert.equal(mode, '644', "the token file has the volume's defaultMode");
  const podApiServer = testEnv().kube.podApiServer;
  if (podApiServer)
    assert.equal(host, podApiServer.split(':')[0], 'KUBERNETES_SERVICE_HOST is SVK_POD_API_SERVER');
}

async function tokenRefresh(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('sa-refresh');
  await grantView(ns);
  // Polls the token every 2 s; once it changes, the age of the first at that moment, and a read with the new one.
  const script = `
const first = fs.readFileSync(dir + '/token', 'utf8');
const iat = claims(first).iat;
const poll = setInterval(() => {
  const now = fs.readFileSync(dir + '/token', 'utf8');
  if (now === first) { if (Date.now() / 1000 - iat > 590) say('NOT-RENEWED', 4); return; }
  clearInterval(poll);
  const age = Math.round(Date.now() / 1000 - iat);
  readOwnPod().then((pod) => say('RENEWED ' + age + ' ' + (claims(now).iat - iat) + ' ' + pod.metadata.uid, 0),
    (err) => say('FAILED with the new token ' + err.message, 3));
}, 2000);
`;
  await h.pods.create(ns, clientPod(h, script, 600));
  const { pod, terminated } = await finished(h, ns, 12 * MINUTE);
  process.stderr.write(`[projected-token-refresh] ${terminated?.message}\n`);
  assert.equal(
    terminated?.exitCode,
    0,
    `the token was renewed and the new one works (${terminated?.message})`,
  );
  const [word, age, newIssuedAfter, uid] = (terminated?.message ?? '').split(' ');
  assert.equal(word, 'RENEWED');
  assert.equal(uid, pod.metadata?.uid);
  // The kubelet's rule: past 480 s less a jitter below 10 s, seen at the next minute's refresh (and a 2 s poll).
  assert.ok(Number(age) >= 470 && Number(age) <= 560, `renewed at ${age} s of 600`);
  assert.ok(Number(newIssuedAfter) >= 470, `the new token was issued ${newIssuedAfter} s after the first`);
}
