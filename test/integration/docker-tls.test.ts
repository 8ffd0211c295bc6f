import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { loadDependencies } from '../../lib/app/dependencies.ts';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { createLogger, type Logger } from '../../lib/log/logger.ts';
import {
  createDockerProviders,
  type DockerProviderContext,
  secretsManagerReader,
} from '../../lib/provider/docker/factory.ts';
import { parseDockerSettings } from '../../lib/provider/docker/settings.ts';
import { containerStatus, engineNamePattern, readAll, shellPod } from '../support/docker.ts';
import { startTlsEngine, type TlsEngine } from '../support/docker-tls.ts';
import { testEnv } from '../support/env.ts';
import { functionEnv, kubeletClients, uniqueName, waitFor } from '../support/kube.ts';

/** A Secrets Manager client whose transport answers GetSecretValue with `secret`, noting each request. */
function secretsManagerAnswering(secret: string, asked: string[]): SecretsManagerClient {
  // No Secrets Manager can run here: the SDK's transport answers as GetSecretValue does.
  return new SecretsManagerClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'example' },
    requestHandler: {
      handle: async (request: { body?: unknown; headers: Record<string, string> }) => {
        const raw = request.body;
        // The SDK's body answers string methods with a warning: read its bytes.
        const body =
          raw instanceof Uint8Array
            ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8')
            : raw;
        asked.push(`${request.headers['x-amz-target']} ${String(body)}`);
        return {
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.1' },
            body: Readable.from([Buffer.from(JSON.stringify({ Name: 'engine-tls', SecretString: secret }))]),
          },
        };
      },
    },
  });
}

/** The project's logger at its most verbose, every line kept. */
function capturingLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger({ level: 'trace' }, { write: (line: string) => lines.push(line) }), lines };
}

/** The base64 lines of PEM texts: any part of the material that reached a log shows one of them. */
function pemBodies(...pems: string[]): string[] {
  return pems.flatMap((pem) =>
    pem
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.length >= 16 && !l.startsWith('-----')),
  );
}

/**
 * A remote engine over TLS with client certificates: under Docker Engine its
 * own `--tlsverify` endpoint; under Podman (4.3 serves no TLS of its own)
 * stunnel in front of the run's engine socket, verifying client
 * certificates as dockerd does. The client side is the same for both.
 */
describe('docker provider: a remote engine over TLS with client certificates', () => {
  const env = testEnv();
  let engine: TlsEngine;
  before(async () => {
    engine = await startTlsEngine(join(env.docker.dir, '..', `tls-${process.pid}`), env);
  });
  after(async () => {
    await engine?.stop();
  });

  const context: DockerProviderContext = {
    config: {
      node: { capacity: { cpu: '4', memory: '8Gi', pods: '20' }, operatingSystem: 'linux' },
      pods: { maxParallel: 4 },
    },
    clock: systemClock,
    log: createLogger({ level: 'silent' }),
    region: 'local',
    kubeletVersion: 'v1.20.2-svk',
    kube: kubeletClients(env),
  };

  function tlsSecret(): string {
    return JSON.stringify({
      ca: readFileSync(join(engine.certPath, 'ca.pem'), 'utf8'),
      cert: readFileSync(join(engine.certPath, 'cert.pem'), 'utf8'),
      key: readFileSync(join(engine.certPath, 'key.pem'), 'utf8'),
    });
  }

  function settings(vars: Record<string, string>) {
    const parsed = parseDockerSettings({
      SVK_DOCKER_HOST: engine.host,
      SVK_DOCKER_NETWORK: env.docker.network,
      ...vars,
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    return parsed.settings;
  }

  it('runs a pod and reads its log through the TLS endpoint with certificates from a directory', async () => {
    const { nodeProvider, podProvider } = await createDockerProviders(
      settings({ SVK_DOCKER_CERT_PATH: engine.certPath }),
      context,
    );
    assert.equal(engine.servedBy, env.docker.engine === 'dockerd' ? 'dockerd' : 'stunnel');
    await nodeProvider.ping('vk-tls');
    const status = await nodeProvider.nodeStatus('vk-tls');
    assert.equal(status.conditions.find((c) => c.type === 'Ready')?.status, 'True');
    assert.match(status.nodeInfo.osImage, engineNamePattern(env));
    const pod = shellPod(uniqueName('ns'), 'tls', { main: 'echo over tls' }, { node: 'vk-tls' });
    try {
      await podProvider.createPod(pod);
      const done = await waitFor(
        async () => {
          const got = await podProvider.getPod(pod.metadata?.namespace ?? '', 'tls');
          return got?.status?.phase === 'Succeeded' ? got : undefined;
        },
        { timeoutMs: 30_000, what: 'the pod to succeed over TLS' },
      );
      assert.equal(containerStatus(done, 'main')?.state?.terminated?.exitCode, 0);
      const logs = await podProvider.containerLogs?.(pod, 'main', {});
      assert.ok(logs, 'the docker provider serves logs');
      assert.equal(await readAll(logs), 'over tls\n');
    } finally {
      await podProvider.deletePod(pod).catch(() => undefined);
    }
  });

  it('reads the TLS material from a Secrets Manager secret (the real SDK client, its transport replaced)', async () => {
    const secret = tlsSecret();
    const asked: string[] = [];
    const client = secretsManagerAnswering(secret, asked);
    const { nodeProvider } = await createDockerProviders(
      settings({ SVK_DOCKER_TLS_SECRET: 'engine-tls' }),
      context,
      { readSecret: secretsManagerReader('us-east-1', client) },
    );
    await nodeProvider.ping('vk-tls');
    assert.equal(asked.length, 1);
    assert.match(asked[0] ?? '', /^secretsmanager\.GetSecretValue .*"SecretId":"engine-tls"/);
  });

  it('is refused by the engine without a certificate it trusts', async () => {
    const { nodeProvider } = await createDockerProviders(
      settings({ SVK_DOCKER_CERT_PATH: engine.strangerCertPath }),
      context,
    );
    await assert.rejects(nodeProvider.ping('vk-tls'), /docker engine does not answer/);
  });

  it('never logs the key, the certificate or the CA: a cold start, a pod, a refused client, at trace level', {
    timeout: 90_000,
  }, async () => {
    const { log, lines } = capturingLogger();
    const node = 'vk-tls-logs';
    // A function's cold start: the config from its environment, the composition root building the provider.
    const deps = await loadDependencies(
      loadConfig(
        functionEnv(env.dynamodb.tableName, {
          SVK_NODE_NAMES: node,
          SVK_PROVIDER: 'docker',
          SVK_DOCKER_HOST: engine.host,
          SVK_DOCKER_CERT_PATH: engine.certPath,
          SVK_DOCKER_NETWORK: env.docker.network,
          SVK_LOG_LEVEL: 'trace',
        }),
      ),
      { log },
    );
    await deps.nodeProvider.ping(node);
    await deps.nodeProvider.nodeStatus(node);
    const pod = shellPod(uniqueName('ns'), 'tls-logs', { main: 'echo logged' }, { node });
    try {
      await deps.podProvider.createPod(pod);
      await waitFor(
        async () =>
          (await deps.podProvider.getPod(pod.metadata?.namespace ?? '', 'tls-logs'))?.status?.phase ===
          'Succeeded',
        { timeoutMs: 30_000, what: 'the pod to succeed over TLS' },
      );
    } finally {
      await deps.podProvider.deletePod(pod).catch(() => undefined);
    }
    // The material from a secret, and a client the engine refuses, logged as the heartbeat logs a failed ping.
    const fromSecret = await createDockerProviders(
      settings({ SVK_DOCKER_TLS_SECRET: 'engine-tls' }),
      { ...context, log },
      { readSecret: secretsManagerReader('us-east-1', secretsManagerAnswering(tlsSecret(), [])) },
    );
    await fromSecret.nodeProvider.ping(node);
    const stranger = await createDockerProviders(
      settings({ SVK_DOCKER_CERT_PATH: engine.strangerCertPath }),
      {
        ...context,
        log,
      },
    );
    const refused = await stranger.nodeProvider.ping(node).then(
      () => assert.fail('the engine answered a client it does not trust'),
      (err: unknown) => err,
    );
    log.warn({ err: refused }, 'provider ping failed: node turns Ready=False');

    const logged = lines.join('');
    assert.match(logged, /container created/, 'the provider logged its work (the capture is not empty)');
    assert.match(logged, /provider ping failed/);
    const material = ['ca.pem', 'cert.pem', 'key.pem'].flatMap((file) => [
      readFileSync(join(engine.certPath, file), 'utf8'),
      readFileSync(join(engine.strangerCertPath, file), 'utf8'),
    ]);
    const bodies = pemBodies(...material);
    assert.ok(bodies.length >= 6, 'every PEM has a body');
    assert.deepEqual(
      bodies.filter((b) => logged.includes(b)),
      [],
      'no line of the TLS material was logged',
    );
    assert.doesNotMatch(logged, /-----BEGIN/);
  });
});
