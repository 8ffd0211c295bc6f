import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dumpYaml } from '@kubernetes/client-node';
import { DEFAULT_PROBER_IMAGE } from '../../lib/provider/docker/settings.ts';
import { PipelineHarness } from '../harness/pipeline-harness.ts';
import { dockerProviderSetup } from '../harness/providers/docker.ts';
import { testEnv } from '../support/env.ts';
import { uniqueName, waitFor } from '../support/kube.ts';
import { kubectl } from '../support/kubelet-api.ts';

/**
 * An application as a user ships it, end to end on real containers and
 * through kubectl only: its configuration in a ConfigMap volume, its TLS
 * key in a Secret volume, and its service account (with a Role to list
 * pods) whose token the v1.20 API server mounts; the application reads
 * both files and lists the pods of its namespace from the API server at
 * KUBERNETES_SERVICE_HOST, verifying it against the token's ca.crt.
 */

const MINUTE = 60_000;

const APP = `
const fs = require('fs'), https = require('https'), crypto = require('crypto');
const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
const done = (m, code) => { fs.writeFileSync('/dev/termination-log', m); process.exit(code); };
try {
  const greeting = /^greeting: (.*)$/m.exec(fs.readFileSync('/etc/app/config.yaml', 'utf8'))[1];
  const pem = fs.readFileSync('/etc/tls/tls.key');
  crypto.createPrivateKey(pem);
  const keyHash = crypto.createHash('sha256').update(pem).digest('hex');
  const ns = fs.readFileSync(sa + '/namespace', 'utf8');
  const req = https.get({
    host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,
    path: '/api/v1/namespaces/' + ns + '/pods', ca: fs.readFileSync(sa + '/ca.crt'),
    headers: { Authorization: 'Bearer ' + fs.readFileSync(sa + '/token', 'utf8') }, timeout: 10000,
  }, (res) => {
    let body = '';
    res.on('data', (c) => { body += c; });
    res.on('end', () => {
      if (res.statusCode !== 200) done('HTTP ' + res.statusCode + ' ' + body.slice(0, 300), 3);
      const names = JSON.parse(body).items.map((p) => p.metadata.name).sort().join(',');
      done(['APP-OK', greeting, keyHash, names].join(' '), 0);
    });
  });
  req.on('error', (e) => done('FAILED ' + e.message, 3));
  req.on('timeout', () => req.destroy(new Error('timeout')));
} catch (e) { done('FAILED ' + e.message, 3); }
`;

describe('docker provider: an application with its config, its TLS key and its service account, through kubectl', () => {
  let h: PipelineHarness;
  before(async () => {
    h = await PipelineHarness.start({ environment: testEnv(), provider: dockerProviderSetup(testEnv()) });
  });
  after(async () => {
    await h?.stop();
  });

  it('reads its ConfigMap and Secret volumes and lists pods with its token', {
    timeout: 6 * MINUTE,
  }, async () => {
    const ns = uniqueName('app-creds');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const node = h.nodes[0] ?? '';
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app', namespace: ns } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'pod-lister', namespace: ns },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'app-lists-pods', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-lister' },
        subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }],
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'app-config', namespace: ns },
        data: { 'config.yaml': 'greeting: hello-from-configmap\n' },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'app-tls', namespace: ns },
        type: 'Opaque',
        stringData: { 'tls.key': keyPem },
      },
    ];
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: ns },
      spec: {
        serviceAccountName: 'app',
        restartPolicy: 'Never',
        nodeSelector: { 'kubernetes.io/hostname': node },
        tolerations: [{ operator: 'Exists' }],
        volumes: [
          { name: 'config', configMap: { name: 'app-config' } },
          { name: 'tls', secret: { secretName: 'app-tls', defaultMode: 0o400 } },
        ],
        containers: [
          {
            name: 'app',
            image: DEFAULT_PROBER_IMAGE,
            imagePullPolicy: 'IfNotPresent',
            command: ['node', '-e', APP],
            volumeMounts: [
              { name: 'config', mountPath: '/etc/app' },
              { name: 'tls', mountPath: '/etc/tls' },
            ],
          },
        ],
      },
    };
    const dir = mkdtempSync(join(tmpdir(), 'svk-app-'));
    const setup = join(dir, 'setup.yaml');
    const app = join(dir, 'app.yaml');
    writeFileSync(setup, objects.map((o) => dumpYaml(o)).join('---\n'));
    writeFileSync(app, dumpYaml(pod));
    const applied = await kubectl(['apply', '-f', setup]);
    assert.equal(applied.code, 0, applied.stderr);
    // The pod goes in once its service account has its token (the admission mounts it).
    await waitFor(
      async () =>
        (await kubectl(['-n', ns, 'get', 'serviceaccount', 'app', '-o', 'jsonpath={.secrets[0].name}']))
          .stdout || undefined,
      { timeoutMs: 30_000, what: 'the token of service account app' },
    );
    const created = await kubectl(['apply', '-f', app]);
    assert.equal(created.code, 0, created.stderr);
    const phase = await waitFor(
      async () => {
        const got = await kubectl(['-n', ns, 'get', 'pod', 'app', '-o', 'jsonpath={.status.phase}']);
        return ['Succeeded', 'Failed'].includes(got.stdout) ? got.stdout : undefined;
      },
      { timeoutMs: 4 * MINUTE, intervalMs: 1000, what: 'pod app finished' },
    );
    const message = (
      await kubectl([
        '-n',
        ns,
        'get',
        'pod',
        'app',
        '-o',
        'jsonpath={.status.containerStatuses[0].state.terminated.message}',
      ])
    ).stdout;
    assert.equal(phase, 'Succeeded', message);
    const [ok, greeting, keyHash, pods] = message.split(' ');
    assert.equal(ok, 'APP-OK');
    assert.equal(greeting, 'hello-from-configmap');
    assert.equal(keyHash, createHash('sha256').update(keyPem).digest('hex'), 'the TLS key as stored');
    assert.equal(pods, 'app', 'the pods of its namespace, listed with its token');
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });
});
