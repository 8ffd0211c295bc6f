/**
 * Credentials that rotate, against the real API server: a token revoked
 * while the functions are warm, its replacement already in the kubeconfig's
 * source. A 401 reads the source again once and the request goes through;
 * a source that still holds the revoked token leaves the 401 standing after
 * one more attempt. The tokens are ServiceAccount tokens (a token Secret
 * deleted is a token revoked at once: the API server looks the Secret up).
 * Two sources: a kubeconfig file, and a Secrets Manager secret read by the
 * real SDK client with only its transport replaced (it answers
 * GetSecretValue with what the secret holds now).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { dumpYaml, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { systemClock } from '../../lib/clock.ts';
import { awsCredentialSources } from '../../lib/kube/aws-credential-sources.ts';
import { apiStatusCode, createKubeClients, loadKubeConfig } from '../../lib/kube/client.ts';
import { loadClusterKubeConfig } from '../../lib/kube/credentials.ts';
import { rawGet } from '../../lib/kube/raw-get.ts';
import { watchStream } from '../../lib/kube/watch.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  uniqueName,
  waitFor,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const adminRbac = admin.config.makeApiClient(RbacAuthorizationV1Api);
const ns = uniqueName('rotate');
const dir = mkdtempSync(join(tmpdir(), 'svk-rotate-'));
const SA = 'rotating';

/** A new token Secret of the ServiceAccount, once the token controller filled it in. */
async function issueToken(): Promise<{ name: string; token: string }> {
  const name = uniqueName('sa-token');
  await admin.core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name, annotations: { 'kubernetes.io/service-account.name': SA } },
      type: 'kubernetes.io/service-account-token',
    },
  });
  const token = await waitFor(
    async () => {
      const secret = await admin.core.readNamespacedSecret({ namespace: ns, name });
      const data = secret.data?.token;
      return data ? Buffer.from(data, 'base64').toString('utf8') : undefined;
    },
    { timeoutMs: 30_000, what: `token Secret ${name} filled in` },
  );
  return { name, token };
}

/** Deletes a token Secret and waits until the API server refuses its token. */
async function revoke(secret: { name: string; token: string }): Promise<void> {
  await admin.core.deleteNamespacedSecret({ namespace: ns, name: secret.name });
  const probe = createKubeClients(await loadKubeConfig({ kubeconfigYaml: kubeconfig(secret.token) }));
  await waitFor(
    async () => {
      try {
        await probe.core.readNamespacedConfigMap({ namespace: ns, name: 'settings' });
        return false;
      } catch (err) {
        return apiStatusCode(err) === 401;
      }
    },
    { timeoutMs: 30_000, what: `token of ${secret.name} refused` },
  );
}

function kubeconfig(token: string): string {
  return dumpYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'svk',
        cluster: { server: env.kube.server, 'certificate-authority-data': caData() },
      },
    ],
    users: [{ name: SA, user: { token } }],
    contexts: [{ name: 'svk', context: { cluster: 'svk', user: SA } }],
    'current-context': 'svk',
  });
}

function caData(): string {
  return Buffer.from(
    // The cluster CA the admin kubeconfig trusts.
    admin.context.ca ?? assert.fail('the admin kubeconfig names the cluster CA'),
  ).toString('base64');
}

before(async () => {
  await createTestNamespace(admin, ns);
  await admin.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: SA } } });
  await admin.core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'settings' }, data: { colour: 'blue' } },
  });
  await adminRbac.createNamespacedRole({
    namespace: ns,
    body: {
      metadata: { name: 'read-settings' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
  });
  await adminRbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'read-settings' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-settings' },
      subjects: [{ kind: 'ServiceAccount', name: SA, namespace: ns }],
    },
  });
});

after(async () => {
  await deleteTestNamespace(admin, ns);
  rmSync(dir, { recursive: true, force: true });
});

describe('credentials that rotate: a 401 reads the kubeconfig source again, once', () => {
  it('a kubeconfig file: the revoked token is replaced by the one the file holds now', async () => {
    const path = join(dir, 'file.kubeconfig');
    const first = await issueToken();
    writeFileSync(path, kubeconfig(first.token), { mode: 0o600 });
    const kube = createKubeClients(await loadKubeConfig({ kubeconfigPath: path }));
    const read = () => kube.core.readNamespacedConfigMap({ namespace: ns, name: 'settings' });
    assert.equal((await read()).data?.colour, 'blue');

    // Rotation as an operator does it: the new credential into the source, then the old one revoked.
    const second = await issueToken();
    writeFileSync(path, kubeconfig(second.token), { mode: 0o600 });
    await revoke(first);
    const before = kube.requests();
    assert.equal((await read()).data?.colour, 'blue', 'the warm client reads the file again and goes on');
    assert.equal(kube.requests() - before, 2, 'the refused attempt and the one with the new token');
    assert.equal(kube.context.generation, 1);

    // Revoked, and the file not yet updated: the 401 stands, after at most one more attempt
    // (a read of the file within RELOAD_MIN_INTERVAL_MS of the last is not made).
    await revoke(second);
    const again = kube.requests();
    await assert.rejects(read(), (err: unknown) => apiStatusCode(err) === 401);
    assert.ok(kube.requests() - again <= 2, 'at most one more attempt');
  });

  it('a Secrets Manager secret, read by the SDK client (transport replaced): the new value is used', async () => {
    const first = await issueToken();
    let secretString = kubeconfig(first.token);
    const reads: string[] = [];
    // The real client; only its transport answers, with the secret's current value.
    const secretsManager = new SecretsManagerClient({
      region: env.dynamodb.region,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      requestHandler: {
        handle: async (request: { headers: Record<string, string>; body?: unknown }) => {
          reads.push(String(request.headers['x-amz-target']));
          return {
            response: {
              statusCode: 200,
              headers: { 'content-type': 'application/x-amz-json-1.1' },
              body: Buffer.from(
                JSON.stringify({
                  ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:svk/kubeconfig-AbCdEf',
                  Name: 'svk/kubeconfig',
                  SecretString: secretString,
                  VersionId: `v${reads.length}`,
                }),
              ),
            },
          };
        },
      },
    });
    // The client answers as Secrets Manager would.
    const probe = await secretsManager.send(new GetSecretValueCommand({ SecretId: 'svk/kubeconfig' }));
    assert.equal(probe.SecretString, secretString);
    reads.length = 0;

    const context = await loadClusterKubeConfig(
      { kubeconfigSecret: 'svk/kubeconfig' },
      {
        region: env.dynamodb.region,
        clock: systemClock,
        sources: awsCredentialSources({ region: env.dynamodb.region, clients: { secretsManager } }),
      },
    );
    assert.deepEqual(reads, ['secretsmanager.GetSecretValue'], 'read once at cold start');
    const kube = createKubeClients(context);
    const read = () => kube.core.readNamespacedConfigMap({ namespace: ns, name: 'settings' });
    assert.equal((await read()).data?.colour, 'blue');
    assert.equal(reads.length, 1, 'not read again while the token is accepted');

    const second = await issueToken();
    secretString = kubeconfig(second.token);
    await revoke(first);
    // Several requests refused together: one read of the secret serves them all.
    const answers = await Promise.all([read(), read(), read()]);
    assert.deepEqual(
      answers.map((a) => a.data?.colour),
      ['blue', 'blue', 'blue'],
    );
    assert.equal(reads.length, 2, 'the secret read once more, for all three');
  });

  /** A context on a kubeconfig file whose token is then rotated (the new one in the file, the old one revoked). */
  async function rotatedContext(file: string) {
    const path = join(dir, file);
    const first = await issueToken();
    writeFileSync(path, kubeconfig(first.token), { mode: 0o600 });
    const context = await loadKubeConfig({ kubeconfigPath: path });
    const second = await issueToken();
    writeFileSync(path, kubeconfig(second.token), { mode: 0o600 });
    await revoke(first);
    return context;
  }

  it("a raw read (the kubelet API's /pods) refused with 401 is sent once more with what the file holds now", async () => {
    const context = await rotatedContext('raw.kubeconfig');
    const raw = await rawGet(context, `/api/v1/namespaces/${ns}/configmaps/settings`, 10_000);
    assert.equal(raw.status, 200, raw.body.toString('utf8'));
    assert.equal(
      (JSON.parse(raw.body.toString('utf8')) as { data?: { colour?: string } }).data?.colour,
      'blue',
    );
    assert.equal(context.generation, 1);
  });

  it('a watch refused with 401 is opened once more with what the file holds now', async () => {
    const context = await rotatedContext('watch.kubeconfig');
    const seen: string[] = [];
    let opened = false;
    await watchStream(
      context,
      `/api/v1/namespaces/${ns}/configmaps`,
      { timeoutSeconds: 1 },
      (type, object) => seen.push(`${type} ${(object as { metadata?: { name?: string } }).metadata?.name}`),
      AbortSignal.timeout(20_000),
      { onOpen: () => (opened = true) },
    );
    assert.ok(opened, 'the watch was accepted');
    assert.ok(seen.includes('ADDED settings'), seen.join(', '));
    assert.equal(context.generation, 1);
  });
});
