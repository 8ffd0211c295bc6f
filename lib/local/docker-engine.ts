import { createEngineClient } from '../provider/docker/engine-client.ts';
import { engineName } from '../provider/docker/engine-name.ts';
import { parseDockerSettings } from '../provider/docker/settings.ts';
import { errorMessage } from '../util/error-message.ts';

/** How long `npm start` waits for a Docker-compatible engine to answer. */
const PING_TIMEOUT_MS = 2_000;

/**
 * Which provider `npm start` runs when SVK_PROVIDER is not set: `docker` when
 * a Docker-compatible engine answers at SVK_DOCKER_HOST, else DOCKER_HOST,
 * else the default socket; `mock` otherwise. Says why, for its first lines.
 * An engine whose TLS material is in Secrets Manager is not tried: a local
 * run reads no AWS secret to decide.
 */
export async function localProvider(
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ provider: 'docker' | 'mock'; reason: string }> {
  const parsed = parseDockerSettings(env);
  if (!parsed.ok) {
    return {
      provider: 'mock',
      reason: `no usable Docker engine setting (${parsed.issues.map((i) => `${i.variable} ${i.message}`).join('; ')})`,
    };
  }
  const { endpoint } = parsed.settings;
  const where =
    endpoint.kind === 'unix' ? `unix://${endpoint.socketPath}` : `tcp://${endpoint.host}:${endpoint.port}`;
  if (endpoint.kind === 'tcp' && 'secret' in endpoint.tls) {
    return {
      provider: 'mock',
      reason: `${where} needs its TLS secret from Secrets Manager; set SVK_PROVIDER=docker to use it`,
    };
  }
  try {
    const docker = await createEngineClient(endpoint, async () => '');
    const version = await Promise.race([
      docker.version(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('no answer')), PING_TIMEOUT_MS).unref(),
      ),
    ]);
    const engine = engineName(version);
    return { provider: 'docker', reason: `${engine} ${version.Version} answers at ${where}` };
  } catch (err) {
    return {
      provider: 'mock',
      reason: `no Docker-compatible engine answers at ${where} (${errorMessage(err)})`,
    };
  }
}
