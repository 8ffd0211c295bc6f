import type { V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../kube/client.ts';
import type { CoreApi } from '../kube/core-api.ts';
import { errorMessage } from '../util/error-message.ts';
import {
  type FileProjection,
  type FileVolume,
  type SourceData,
  sourceKey,
  sourcesToRead,
  volumePayload,
} from './file-volumes.ts';
import type { TokenRequester } from './projected-token.ts';

/**
 * Where a provider reads the ConfigMaps and Secrets of file volumes
 * (configMap, secret, projected), and the read of one volume's files from
 * them: provider-neutral, shared by the Docker provider (which writes the
 * files into the pod's volumes) and ECS Fargate (which hands them to the
 * task's volume writer).
 */

/** ConfigMaps and Secrets as a file volume reads them: keys to bytes, undefined when missing. */
export interface VolumeSources {
  configMap(namespace: string, name: string): Promise<SourceData>;
  secret(namespace: string, name: string): Promise<SourceData>;
  /** The pod as the API server has it now (for its labels and annotations), undefined when gone. */
  pod?(namespace: string, name: string): Promise<V1Pod | undefined>;
  /**
   * A token of `serviceAccount` from the TokenRequest API, bound to the pod; rejects when it cannot be
   * had (absent: no API server, no token).
   */
  serviceAccountToken?: TokenRequester;
}

/**
 * The volume's files, its ConfigMaps and Secrets read through `sources`
 * (one `get` each), or the kubelet's FailedMount wording when one cannot
 * be read or a mandatory one (or key) is missing (see volumePayload). The
 * error names objects and keys, never data. `given`: data the caller has
 * already (a projected volume's tokens, by their tokenKey).
 */
export async function readVolumePayload(
  sources: VolumeSources,
  namespace: string,
  files: FileVolume,
  signal?: AbortSignal,
  given: ReadonlyMap<string, SourceData> = new Map(),
): Promise<{ files: FileProjection[] } | { error: string }> {
  const data = new Map<string, SourceData>(given);
  for (const source of sourcesToRead(files)) {
    signal?.throwIfAborted();
    try {
      data.set(
        sourceKey(source.kind, source.name),
        source.kind === 'configMap'
          ? await sources.configMap(namespace, source.name)
          : await sources.secret(namespace, source.name),
      );
    } catch (err) {
      const noun = source.kind === 'configMap' ? 'configmap' : 'secret';
      return { error: `failed to get ${noun} "${source.name}": ${errorMessage(err)}` };
    }
  }
  return volumePayload(files, data);
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
