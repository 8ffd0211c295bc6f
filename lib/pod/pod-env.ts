import type { CoreV1Api, V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../kube/client.ts';

/**
 * Env resolution before a pod goes to the provider, as the kubelet does it
 * (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables) and seed 001's
 * provider expects it: every container's `envFrom` and `env` become one plain
 * `env` list of name/value pairs.
 *
 * - envFrom ConfigMaps and Secrets first, in order (later ones win), keys
 *   prefixed and skipped (with a warning) when not valid variable names;
 * - then env in order, overriding: literal values with `$(VAR)` expanded
 *   against the variables defined so far, ConfigMap/Secret keys, the
 *   downward API (fieldRef) and container resources (resourceFieldRef);
 * - an optional reference that is missing is skipped with a warning; a
 *   mandatory one fails the whole resolution ({@link EnvResolveError}).
 *
 * Not done: service link variables (`<SVC>_SERVICE_HOST`...), which would need
 * list access to every Service; the reasons below are virtual-kubelet's.
 */

/** Event reasons, from virtual-kubelet's node/env.go. */
export const ENV_REASONS = {
  optionalConfigMapNotFound: 'OptionalConfigMapNotFound',
  optionalConfigMapKeyNotFound: 'OptionalConfigMapKeyNotFound',
  failedToReadOptionalConfigMap: 'FailedToReadOptionalConfigMap',
  optionalSecretNotFound: 'OptionalSecretNotFound',
  optionalSecretKeyNotFound: 'OptionalSecretKeyNotFound',
  failedToReadOptionalSecret: 'FailedToReadOptionalSecret',
  mandatoryConfigMapNotFound: 'MandatoryConfigMapNotFound',
  mandatoryConfigMapKeyNotFound: 'MandatoryConfigMapKeyNotFound',
  failedToReadMandatoryConfigMap: 'FailedToReadMandatoryConfigMap',
  mandatorySecretNotFound: 'MandatorySecretNotFound',
  mandatorySecretKeyNotFound: 'MandatorySecretKeyNotFound',
  failedToReadMandatorySecret: 'FailedToReadMandatorySecret',
  invalidEnvironmentVariableNames: 'InvalidEnvironmentVariableNames',
  /** The kubelet's container waiting reason when its environment cannot be built. */
  createContainerConfigError: 'CreateContainerConfigError',
} as const;

/** Where referenced ConfigMaps and Secrets come from; plain objects in unit tests. */
export interface EnvSources {
  /** The ConfigMap's data, or undefined when it does not exist. Rejects when it cannot be read. */
  configMap(namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined>;
  /** The Secret's data, decoded, or undefined when it does not exist. Rejects when it cannot be read. */
  secret(namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined>;
}

/** A mandatory reference could not be resolved; the pod must not go to the provider yet. */
export class EnvResolveError extends Error {
  override readonly name = 'EnvResolveError';
  constructor(
    /** The Event reason, e.g. MandatoryConfigMapNotFound. */
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Something skipped that the pod's owner should hear about (as a Warning event). */
export interface EnvWarning {
  reason: string;
  message: string;
}

export interface EnvOptions {
  /** The node's IP, for `status.hostIP` before the pod has one. */
  hostIp?: string;
  /** Node allocatable, what a resourceFieldRef on a missing limit reports (as the kubelet does). */
  allocatable?: Readonly<Record<string, string>>;
}

export interface ResolvedEnv {
  /** A copy of the pod whose containers carry only plain `env`; the input is left alone. */
  pod: V1Pod;
  warnings: EnvWarning[];
}

/**
 * Resolves the environment of every init container and container of `pod`.
 * @throws EnvResolveError naming the missing ConfigMap, Secret or key (or an
 *   unsupported field path) when a mandatory reference fails.
 */
export async function resolvePodEnv(
  pod: V1Pod,
  sources: EnvSources,
  options: EnvOptions = {},
): Promise<ResolvedEnv> {
  const copy = structuredClone(pod);
  const warnings: EnvWarning[] = [];
  const cached = memoize(sources);
  const spec = copy.spec;
  if (spec) {
    for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
      container.env = await containerEnv(copy, container, cached, options, warnings);
      delete container.envFrom;
    }
  }
  return { pod: copy, warnings };
}

/** Kubernetes' rule for variable names (IsEnvVarName). */
export function isEnvVarName(name: string): boolean {
  return /^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(name);
}

/**
 * Kubernetes' `$(VAR)` expansion (third_party/forked/golang/expansion):
 * `$(NAME)` becomes the variable's value when defined and stays as written
 * otherwise; `$$` is a literal `$`; anything else is copied.
 */
export function expandEnv(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      i++;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += '$(';
        i += 2;
      } else {
        const name = input.slice(i + 2, close);
        out += lookup(name) ?? `$(${name})`;
        i = close + 1;
      }
    } else {
      out += `$${next}`;
      i += 2;
    }
  }
  return out;
}

async function containerEnv(
  pod: V1Pod,
  container: V1Container,
  sources: EnvSources,
  options: EnvOptions,
  warnings: EnvWarning[],
): Promise<V1EnvVar[]> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const env = new Map<string, string>();
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const kind = from.configMapRef ? 'configmap' : 'secret';
    const data = await lookupObject(
      kind,
      namespace,
      ref.name ?? '',
      ref.optional === true,
      sources,
      warnings,
      (r) => `${kind} "${r}" not found`,
    );
    if (!data) continue;
    const invalid: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = `${from.prefix ?? ''}${key}`;
      if (isEnvVarName(name)) env.set(name, value);
      else invalid.push(name);
    }
    if (invalid.length > 0) {
      warnings.push({
        reason: ENV_REASONS.invalidEnvironmentVariableNames,
        message: `keys [${invalid.sort().join(', ')}] from ${kind} ${namespace}/${ref.name} were skipped since they are invalid as environment variable names`,
      });
    }
  }
  for (const variable of container.env ?? []) {
    const value = await envValue(pod, container, variable, env, sources, options, warnings);
    if (value !== undefined) env.set(variable.name, value);
  }
  return [...env].map(([name, value]) => ({ name, value }));
}

/** One `env` entry's value; undefined when an optional reference is missing (the variable is left out). */
async function envValue(
  pod: V1Pod,
  container: V1Container,
  variable: V1EnvVar,
  defined: ReadonlyMap<string, string>,
  sources: EnvSources,
  options: EnvOptions,
  warnings: EnvWarning[],
): Promise<string | undefined> {
  const from = variable.valueFrom;
  if (variable.value !== undefined && variable.value !== '') {
    return expandEnv(variable.value, (name) => defined.get(name));
  }
  if (!from) return variable.value ?? '';
  const namespace = pod.metadata?.namespace ?? 'default';
  const keyRef = from.configMapKeyRef ?? from.secretKeyRef;
  if (keyRef) {
    const kind = from.configMapKeyRef ? 'configmap' : 'secret';
    const optional = keyRef.optional === true;
    const data = await lookupObject(
      kind,
      namespace,
      keyRef.name ?? '',
      optional,
      sources,
      warnings,
      (r) => `skipping optional envvar "${variable.name}": ${kind} "${r}" not found`,
    );
    if (!data) return undefined;
    const value = data[keyRef.key];
    if (value !== undefined) return value;
    const secret = kind === 'secret';
    if (optional) {
      warnings.push({
        reason: secret ? ENV_REASONS.optionalSecretKeyNotFound : ENV_REASONS.optionalConfigMapKeyNotFound,
        message: `skipping optional envvar "${variable.name}": key "${keyRef.key}" does not exist in ${kind} "${keyRef.name}"`,
      });
      return undefined;
    }
    throw new EnvResolveError(
      secret ? ENV_REASONS.mandatorySecretKeyNotFound : ENV_REASONS.mandatoryConfigMapKeyNotFound,
      `${kind} "${keyRef.name}" doesn't contain the "${keyRef.key}" key required by pod ${pod.metadata?.name ?? ''}`,
    );
  }
  if (from.fieldRef) return fieldValue(pod, from.fieldRef.fieldPath, options);
  if (from.resourceFieldRef) {
    const ref = from.resourceFieldRef;
    const target = ref.containerName
      ? [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
          (c) => c.name === ref.containerName,
        )
      : container;
    if (!target) {
      throw new EnvResolveError(
        ENV_REASONS.createContainerConfigError,
        `env "${variable.name}": container "${ref.containerName}" not found`,
      );
    }
    return resourceValue(target, ref.resource, ref.divisor, options.allocatable ?? {}, variable.name);
  }
  return variable.value ?? '';
}

/**
 * A referenced ConfigMap or Secret: its data, or undefined when it is optional
 * and missing (a warning is recorded).
 * @throws EnvResolveError when mandatory and missing or unreadable.
 */
async function lookupObject(
  kind: 'configmap' | 'secret',
  namespace: string,
  name: string,
  optional: boolean,
  sources: EnvSources,
  warnings: EnvWarning[],
  optionalMissingMessage: (name: string) => string,
): Promise<Readonly<Record<string, string>> | undefined> {
  const secret = kind === 'secret';
  let data: Readonly<Record<string, string>> | undefined;
  try {
    data = secret ? await sources.secret(namespace, name) : await sources.configMap(namespace, name);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
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
      message: optionalMissingMessage(name),
    });
    return undefined;
  }
  throw new EnvResolveError(
    secret ? ENV_REASONS.mandatorySecretNotFound : ENV_REASONS.mandatoryConfigMapNotFound,
    `${kind} "${name}" not found`,
  );
}

/** The downward API fields the kubelet offers to env (fieldpath.ExtractFieldPathAsString plus its own). */
export function fieldValue(pod: V1Pod, fieldPath: string, options: EnvOptions = {}): string {
  const subscript = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (subscript) {
    const map = subscript[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations;
    return map?.[subscript[2] ?? ''] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'metadata.labels':
      return formatMap(pod.metadata?.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata?.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return pod.status?.hostIP || options.hostIp || '';
    case 'status.podIP':
      return pod.status?.podIP ?? '';
    case 'status.podIPs':
      return (pod.status?.podIPs ?? []).map((p) => p.ip).join(',');
  }
  throw new EnvResolveError(
    ENV_REASONS.createContainerConfigError,
    `unsupported fieldPath "${fieldPath}" in a fieldRef`,
  );
}

// fieldpath.FormatMap: key="value" lines, sorted.
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map?.[k])}`)
    .join('\n');
}

/**
 * A container's resource limit or request for a resourceFieldRef, divided by
 * the divisor and rounded up, as the kubelet does; a missing limit is the
 * node's allocatable, a missing request 0.
 */
function resourceValue(
  container: V1Container,
  resource: string,
  divisor: string | undefined,
  allocatable: Readonly<Record<string, string>>,
  variable: string,
): string {
  const match = /^(limits|requests)\.(cpu|memory|ephemeral-storage)$/.exec(resource);
  if (!match) {
    throw new EnvResolveError(
      ENV_REASONS.createContainerConfigError,
      `env "${variable}": unsupported resource "${resource}" in a resourceFieldRef`,
    );
  }
  const [, kind = '', name = ''] = match;
  const set = kind === 'limits' ? container.resources?.limits : container.resources?.requests;
  const raw = set?.[name] ?? (kind === 'limits' ? allocatable[name] : undefined) ?? '0';
  const value = parseQuantity(String(raw));
  const by = parseQuantity(divisor === undefined || divisor === '' ? '1' : String(divisor));
  if (!value || !by || by.num === 0n) {
    throw new EnvResolveError(
      ENV_REASONS.createContainerConfigError,
      `env "${variable}": cannot compute ${resource} from "${raw}" / "${divisor ?? '1'}"`,
    );
  }
  // The kubelet divides cpu in millicores and the others in whole units, each rounded up first.
  const scale = name === 'cpu' ? 1000n : 1n;
  const amount = ceilDiv(value.num * scale, value.den);
  const unit = ceilDiv(by.num * scale, by.den);
  return ceilDiv(amount, unit).toString();
}

const SUFFIXES: Record<string, [bigint, bigint]> = {
  n: [1n, 10n ** 9n],
  u: [1n, 10n ** 6n],
  m: [1n, 1000n],
  '': [1n, 1n],
  k: [1000n, 1n],
  M: [10n ** 6n, 1n],
  G: [10n ** 9n, 1n],
  T: [10n ** 12n, 1n],
  P: [10n ** 15n, 1n],
  E: [10n ** 18n, 1n],
  Ki: [2n ** 10n, 1n],
  Mi: [2n ** 20n, 1n],
  Gi: [2n ** 30n, 1n],
  Ti: [2n ** 40n, 1n],
  Pi: [2n ** 50n, 1n],
  Ei: [2n ** 60n, 1n],
};

/** A resource quantity as an exact fraction num/den, or undefined when it is not one. */
export function parseQuantity(text: string): { num: bigint; den: bigint } | undefined {
  const m = /^\+?(\d+)?(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$/.exec(text.trim());
  if (!m || (m[1] === undefined && !m[2])) return undefined;
  const whole = m[1] ?? '0';
  const frac = m[2] ?? '';
  let num = BigInt(whole + frac);
  let den = 10n ** BigInt(frac.length);
  const suffix = m[3] ?? '';
  if (/^[eE]/.test(suffix)) {
    const exp = Number(suffix.slice(1));
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
  } else {
    const [mul, div] = SUFFIXES[suffix] ?? [1n, 1n];
    num *= mul;
    den *= div;
  }
  return { num, den };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

function memoize(sources: EnvSources): EnvSources {
  const configMaps = new Map<string, ReturnType<EnvSources['configMap']>>();
  const secrets = new Map<string, ReturnType<EnvSources['secret']>>();
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
  };
}

/** ConfigMaps and Secrets read from the API server by name (RBAC: get only). */
export function kubeEnvSources(core: CoreV1Api): EnvSources {
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
  };
}
