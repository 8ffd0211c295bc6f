import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { awsClientOptions } from '../../aws/client-options.ts';
import type { NodeSettings } from '../../config/node-settings.ts';
import { isNotFound } from '../../kube/client.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import type { ProviderContext, Providers } from '../provider-factory.ts';
import { DockerNodeProvider } from './docker-node.ts';
import { DockerPodProvider } from './docker-pods.ts';
import { createEngineClient, type SecretReader } from './engine-client.ts';
import { type PullSecretSource, registryAuthResolver } from './registry-auth.ts';
import type { DockerSettings } from './settings.ts';
import type { VolumeSources } from './volume-delivery.ts';

/**
 * Builds the Docker provider: connects to the engine (reading the TLS
 * material from Secrets Manager for a tcp:// engine) and shares the client
 * between the node and pod halves.
 */
export function createProviders(settings: DockerSettings, context: ProviderContext): Promise<Providers> {
  return createDockerProviders(settings, context);
}

/** What {@link createProviders} reads through, replaceable in tests. */
export interface DockerFactoryPorts {
  /** Reads a Secrets Manager secret; GetSecretValue with the default credential chain by default. */
  readSecret?: SecretReader;
}

/** The part of the provider context the Docker provider reads. */
export type DockerProviderContext = Pick<
  ProviderContext,
  'clock' | 'log' | 'region' | 'kubeletVersion' | 'kube' | 'events'
> & {
  config: {
    node: Pick<NodeSettings, 'capacity' | 'operatingSystem' | 'internalIp'>;
    pods: { maxParallel: number };
  };
};

export async function createDockerProviders(
  settings: DockerSettings,
  context: DockerProviderContext,
  ports: DockerFactoryPorts = {},
): Promise<Providers> {
  const { config, clock, log, region } = context;
  const docker = await createEngineClient(
    settings.endpoint,
    ports.readSecret ?? secretsManagerReader(region),
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
        clusterDomain: settings.clusterDomain,
        proberImage: settings.proberImage,
        engineSocket: settings.engineSocket,
        allocatable: config.node.capacity,
      },
      volumeSources: kubeVolumeSources(context.kube.core),
      ...(context.events ? { events: context.events } : {}),
      registryAuth: registryAuthResolver(kubeSecrets(context.kube.core)),
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
    const out = await (client ?? new SecretsManagerClient({ region, ...awsClientOptions() })).send(
      new GetSecretValueCommand({ SecretId: secretId }),
    );
    if (out.SecretString) return out.SecretString;
    if (out.SecretBinary) return Buffer.from(out.SecretBinary).toString('utf8');
    throw new Error(`secret ${secretId} has no value`);
  };
}

/** A pod's imagePullSecrets, read by name (the RBAC's `get secrets`), decoded. */
function kubeSecrets(core: CoreApi): PullSecretSource {
  return async (namespace, name) => {
    try {
      const secret = await core.readNamespacedSecret({ namespace, name });
      return Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
}

/**
 * The ConfigMaps and Secrets of file volumes, read by name (the RBAC's `get
 * configmaps` and `get secrets`), as bytes: a ConfigMap's data and
 * binaryData, a Secret's data decoded; projected tokens from the
 * TokenRequest API (the RBAC's `create serviceaccounts/token`).
 */
export function kubeVolumeSources(core: CoreApi): VolumeSources {
  const missingAsUndefined = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    configMap: (namespace, name) =>
      missingAsUndefined(async () => {
        const cm = await core.readNamespacedConfigMap({ namespace, name });
        return new Map([
          ...Object.entries(cm.data ?? {}).map(([k, v]): [string, Buffer] => [k, Buffer.from(v, 'utf8')]),
          ...Object.entries(cm.binaryData ?? {}).map(([k, v]): [string, Buffer] => [
            k,
            Buffer.from(v, 'base64'),
          ]),
        ]);
      }),
    pod: (namespace, name) => missingAsUndefined(() => core.readNamespacedPod({ namespace, name })),
    serviceAccountToken: async (namespace, serviceAccount, request) => {
      const answer = await core.createNamespacedServiceAccountToken({
        namespace,
        name: serviceAccount,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: {
            audiences: request.audience ? [request.audience] : [],
            expirationSeconds: request.expirationSeconds,
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: request.pod.name, uid: request.pod.uid },
          },
        },
      });
      const token = answer.status?.token;
      const expiresAt = answer.status?.expirationTimestamp;
      if (!token || !expiresAt) throw new Error('the TokenRequest answer has no token or expiry');
      return {
        token: Buffer.from(token, 'utf8'),
        expiresAt: new Date(expiresAt).getTime(),
        expirationSeconds: answer.spec.expirationSeconds ?? request.expirationSeconds,
      };
    },
    secret: (namespace, name) =>
      missingAsUndefined(async () => {
        const secret = await core.readNamespacedSecret({ namespace, name });
        return new Map(
          Object.entries(secret.data ?? {}).map(([k, v]): [string, Buffer] => [k, Buffer.from(v, 'base64')]),
        );
      }),
  };
}
