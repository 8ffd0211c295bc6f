import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { NodeProvider, PodProvider } from '../provider.ts';
import { DockerNodeProvider } from './docker-node.ts';
import { DockerPodProvider } from './docker-pods.ts';
import { createEngineClient, type SecretReader } from './engine-client.ts';
import { type PullSecretSource, registryAuthResolver } from './registry-auth.ts';
import type { DockerSettings } from './settings.ts';

/** What the Docker provider needs besides its settings. */
export interface DockerProviderContext {
  config: {
    node: { capacity: Readonly<Record<string, string>>; operatingSystem: string; internalIp?: string };
    pods: { maxParallel: number };
  };
  clock: Clock;
  log: Logger;
  region: string;
  kubeletVersion: string;
  /** Reads a Secrets Manager secret; the AWS SDK's GetSecretValue by default. */
  readSecret?: SecretReader;
  /** The pods' imagePullSecrets, read from the cluster; without it, images are pulled anonymously. */
  pullSecrets?: PullSecretSource;
}

/**
 * Builds the Docker provider: connects to the engine (reading the TLS
 * material from Secrets Manager for a tcp:// engine) and shares the client
 * between the node and pod halves.
 */
export async function createProviders(
  settings: DockerSettings,
  context: DockerProviderContext,
): Promise<{ nodeProvider: NodeProvider; podProvider: PodProvider }> {
  const { config, clock, log, region } = context;
  const docker = await createEngineClient(
    settings.endpoint,
    context.readSecret ?? secretsManagerReader(region),
  );
  const hostIp =
    settings.hostIp ??
    config.node.internalIp ??
    (settings.endpoint.kind === 'tcp' && /^\d+\.\d+\.\d+\.\d+$/.test(settings.endpoint.host)
      ? settings.endpoint.host
      : '127.0.0.1');
  return {
    nodeProvider: new DockerNodeProvider({
      docker,
      capacity: config.node.capacity,
      operatingSystem: config.node.operatingSystem,
      kubeletVersion: context.kubeletVersion,
    }),
    podProvider: new DockerPodProvider({
      docker,
      clock,
      log: log.child({ provider: 'docker' }),
      settings: {
        network: settings.network,
        infraImage: settings.infraImage,
        hostIp,
        pullTimeoutMs: settings.pullTimeoutMs,
      },
      ...(context.pullSecrets ? { registryAuth: registryAuthResolver(context.pullSecrets) } : {}),
      maxParallel: config.pods.maxParallel,
    }),
  };
}

/**
 * GetSecretValue through `client`, or a client for `region` (the default
 * credential chain) created on first use: the SDK loads only for a tcp://
 * engine whose TLS material is in a secret.
 */
export function secretsManagerReader(region: string, client?: SecretsManagerClient): SecretReader {
  return async (secretId) => {
    const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
    const out = await (client ?? new SecretsManagerClient({ region })).send(
      new GetSecretValueCommand({ SecretId: secretId }),
    );
    if (out.SecretString) return out.SecretString;
    if (out.SecretBinary) return Buffer.from(out.SecretBinary).toString('utf8');
    throw new Error(`secret ${secretId} has no value`);
  };
}
