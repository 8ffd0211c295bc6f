import type { V1Service } from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { errorMessage } from '../../util/error-message.ts';
import { ENV_REASONS, EnvResolveError, type EnvWarning } from './env-reasons.ts';

/**
 * The ConfigMaps and Secrets a pod's env refers to, and the Services its
 * service links name: where they are read from, read once per resolution,
 * and what a missing one means (optional: skipped with a warning; mandatory:
 * the resolution fails).
 */

/** Where referenced ConfigMaps and Secrets, and linked Services, come from; plain objects in unit tests. */
export interface EnvSources {
  /** The ConfigMap's data, or undefined when it does not exist. Rejects when it cannot be read. */
  configMap(namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined>;
  /** The Secret's data, decoded, or undefined when it does not exist. Rejects when it cannot be read. */
  secret(namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined>;
  /** The Services of a namespace, or only the one named `name` (none when it does not exist). Rejects when they cannot be listed. */
  services(namespace: string, name?: string): Promise<readonly V1Service[]>;
}

/** ConfigMaps and Secrets read from the API server by name (RBAC: get only); Services listed (RBAC: list only). */
export function kubeEnvSources(core: CoreApi): EnvSources {
  return {
    configMap: async (namespace, name) => {
      try {
        return (await core.readNamespacedConfigMap({ namespace, name })).data ?? {};
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    secret: async (namespace, name) => {
      try {
        const data = (await core.readNamespacedSecret({ namespace, name })).data ?? {};
        return Object.fromEntries(
          Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
        );
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    services: async (namespace, name) => {
      const list = await core.listNamespacedService({
        namespace,
        ...(name === undefined ? {} : { fieldSelector: `metadata.name=${name}` }),
      });
      return list.items;
    },
  };
}

/** `sources`, reading each object at most once (a pod may refer to one many times). */
export function memoizeEnvSources(sources: EnvSources): EnvSources {
  const configMaps = new Map<string, ReturnType<EnvSources['configMap']>>();
  const secrets = new Map<string, ReturnType<EnvSources['secret']>>();
  const services = new Map<string, ReturnType<EnvSources['services']>>();
  const once = <T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>) => {
    let hit = cache.get(key);
    if (!hit) {
      hit = load();
      cache.set(key, hit);
    }
    return hit;
  };
  return {
    configMap: (ns, name) => once(configMaps, `${ns}/${name}`, () => sources.configMap(ns, name)),
    secret: (ns, name) => once(secrets, `${ns}/${name}`, () => sources.secret(ns, name)),
    services: (ns, name) => once(services, `${ns}/${name ?? ''}`, () => sources.services(ns, name)),
  };
}

/** One reference to a ConfigMap or Secret. */
export interface EnvObjectRef {
  kind: 'configmap' | 'secret';
  namespace: string;
  name: string;
  optional: boolean;
  /** The warning's message when the object is optional and missing. */
  optionalMissingMessage: (name: string) => string;
}

/**
 * A referenced ConfigMap or Secret: its data, or undefined when it is optional
 * and missing or unreadable (a warning is recorded).
 * @throws EnvResolveError when mandatory and missing or unreadable.
 */
export async function lookupEnvObject(
  ref: EnvObjectRef,
  sources: EnvSources,
  warnings: EnvWarning[],
): Promise<Readonly<Record<string, string>> | undefined> {
  const { kind, namespace, name, optional } = ref;
  const secret = kind === 'secret';
  let data: Readonly<Record<string, string>> | undefined;
  try {
    data = secret ? await sources.secret(namespace, name) : await sources.configMap(namespace, name);
  } catch (err) {
    const why = errorMessage(err);
    if (optional) {
      warnings.push({
        reason: secret ? ENV_REASONS.failedToReadOptionalSecret : ENV_REASONS.failedToReadOptionalConfigMap,
        message: `failed to read ${kind} "${name}": ${why}`,
      });
      return undefined;
    }
    throw new EnvResolveError(
      secret ? ENV_REASONS.failedToReadMandatorySecret : ENV_REASONS.failedToReadMandatoryConfigMap,
      `failed to read ${kind} "${name}": ${why}`,
    );
  }
  if (data) return data;
  if (optional) {
    warnings.push({
      reason: secret ? ENV_REASONS.optionalSecretNotFound : ENV_REASONS.optionalConfigMapNotFound,
      message: ref.optionalMissingMessage(name),
    });
    return undefined;
  }
  throw new EnvResolveError(
    secret ? ENV_REASONS.mandatorySecretNotFound : ENV_REASONS.mandatoryConfigMapNotFound,
    `${kind} "${name}" not found`,
  );
}
