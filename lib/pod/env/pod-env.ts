import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { expandEnv } from '../../kube/env-expansion.ts';
import { type DownwardApiOptions, fieldValue, resourceFieldValue } from './downward-api.ts';
import { ENV_REASONS, EnvResolveError, type EnvWarning } from './env-reasons.ts';
import { type EnvSources, lookupEnvObject, memoizeEnvSources } from './env-sources.ts';
import { podServiceEnv } from './service-env.ts';

/**
 * Env resolution before a pod goes to the provider, as the kubelet does it
 * (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables) and as the provider
 * contract expects it (PodProvider.createPod): every container's `envFrom` and
 * `env` become one `env` list in which every variable has its `value`.
 *
 * A variable that came from a reference keeps it in `valueFrom` beside the
 * resolved `value`, so a provider can tell where a value came from: a
 * Secret's value must stay secret, a pod field is specific to this pod. A
 * variable from `envFrom` gets the `configMapKeyRef` or `secretKeyRef` it
 * stands for; a literal whose `$(VAR)` expansion used such a variable takes
 * that variable's `valueFrom` (a Secret's first), since its value carries it.
 *
 * - envFrom ConfigMaps and Secrets first, in order (later ones win), keys
 *   prefixed and skipped (with a warning) when not valid variable names;
 * - then env in order, overriding: literal values with `$(VAR)` expanded
 *   against the variables defined so far and then the service-link ones,
 *   ConfigMap/Secret keys, the downward API (fieldRef) and container
 *   resources (resourceFieldRef);
 * - then the service-link variables (`<SVC>_SERVICE_HOST`..., service-env.ts)
 *   the container does not define itself, in a stable order;
 * - an optional reference that is missing is skipped with a warning; a
 *   mandatory one fails the whole resolution ({@link EnvResolveError}), as
 *   does a failed list of the Services.
 *
 * `command` and `args` are left as written: each provider expands them from
 * this env where it builds what runs (lib/provider/container-command.ts),
 * as the kubelet does when it creates the container. The Event reasons are
 * virtual-kubelet's (env-reasons.ts).
 */

/** What every variable of one pod is resolved against, and where its warnings go. */
interface PodEnvContext {
  pod: V1Pod;
  namespace: string;
  sources: EnvSources;
  options: DownwardApiOptions;
  warnings: EnvWarning[];
  /** The service-link variables, the same for every container of the pod. */
  serviceEnv: ReadonlyMap<string, string>;
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
  options: DownwardApiOptions = {},
): Promise<ResolvedEnv> {
  const copy = structuredClone(pod);
  const memoized = memoizeEnvSources(sources);
  const ctx: PodEnvContext = {
    pod: copy,
    namespace: copy.metadata?.namespace ?? 'default',
    sources: memoized,
    options,
    warnings: [],
    serviceEnv: await podServiceEnv(copy, memoized),
  };
  const spec = copy.spec;
  if (spec) {
    for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
      container.env = await containerEnv(ctx, container);
      delete container.envFrom;
    }
  }
  return { pod: copy, warnings: ctx.warnings };
}

/** Kubernetes' rule for variable names (IsEnvVarName). */
export function isEnvVarName(name: string): boolean {
  return /^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(name);
}

async function containerEnv(ctx: PodEnvContext, container: V1Container): Promise<V1EnvVar[]> {
  const { namespace, sources, warnings } = ctx;
  const env = new Map<string, V1EnvVar>();
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const kind = from.configMapRef ? 'configmap' : 'secret';
    const data = await lookupEnvObject(
      {
        kind,
        namespace,
        name: ref.name ?? '',
        optional: ref.optional === true,
        optionalMissingMessage: (r) => `${kind} "${r}" not found`,
      },
      sources,
      warnings,
    );
    if (!data) continue;
    const invalid: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = `${from.prefix ?? ''}${key}`;
      const selector = { name: ref.name ?? '', key };
      const valueFrom = from.configMapRef ? { configMapKeyRef: selector } : { secretKeyRef: selector };
      if (isEnvVarName(name)) env.set(name, { name, value, valueFrom });
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
    const resolved = await envValue(ctx, container, variable, env);
    if (resolved !== undefined) env.set(variable.name, resolved);
  }
  // The container's own variables win over the service links (kubelet: "skip the key ... so we don't have duplicate env vars").
  for (const [name, value] of ctx.serviceEnv) if (!env.has(name)) env.set(name, { name, value });
  return [...env.values()];
}

/** The reference a value expanded from these variables carries: a Secret's first, else the first one's. */
function inheritedSource(used: readonly V1EnvVar[]): V1EnvVar['valueFrom'] {
  return used.find((v) => v.valueFrom?.secretKeyRef)?.valueFrom ?? used.find((v) => v.valueFrom)?.valueFrom;
}

/** One `env` entry resolved; undefined when an optional reference is missing (the variable is left out). */
async function envValue(
  ctx: PodEnvContext,
  container: V1Container,
  variable: V1EnvVar,
  defined: ReadonlyMap<string, V1EnvVar>,
): Promise<V1EnvVar | undefined> {
  const { name } = variable;
  const from = variable.valueFrom;
  if (variable.value !== undefined && variable.value !== '') {
    const used: V1EnvVar[] = [];
    const value = expandEnv(variable.value, (ref) => {
      const found = defined.get(ref);
      if (found) used.push(found);
      return found ? found.value : ctx.serviceEnv.get(ref);
    });
    const valueFrom = inheritedSource(used);
    return valueFrom ? { name, value, valueFrom } : { name, value };
  }
  if (!from) return { name, value: variable.value ?? '' };
  const value = await referencedValue(ctx, container, variable, from);
  return value === undefined ? undefined : { name, value, valueFrom: from };
}

/** The value a `valueFrom` reference points at; undefined when optional and missing. */
async function referencedValue(
  ctx: PodEnvContext,
  container: V1Container,
  variable: V1EnvVar,
  from: NonNullable<V1EnvVar['valueFrom']>,
): Promise<string | undefined> {
  const { pod, options } = ctx;
  const keyRef = from.configMapKeyRef ?? from.secretKeyRef;
  if (keyRef) return keyValue(ctx, from.configMapKeyRef ? 'configmap' : 'secret', keyRef, variable.name);
  if (from.fieldRef) return fieldValue(pod, from.fieldRef.fieldPath, options);
  if (from.resourceFieldRef) {
    return resourceFieldValue(pod, container, from.resourceFieldRef, variable.name, options);
  }
  return variable.value ?? '';
}

/** A configMapKeyRef's or secretKeyRef's value; undefined when optional and missing. */
async function keyValue(
  ctx: PodEnvContext,
  kind: 'configmap' | 'secret',
  keyRef: { name?: string; key: string; optional?: boolean },
  variable: string,
): Promise<string | undefined> {
  const optional = keyRef.optional === true;
  const data = await lookupEnvObject(
    {
      kind,
      namespace: ctx.namespace,
      name: keyRef.name ?? '',
      optional,
      optionalMissingMessage: (r) => `skipping optional envvar "${variable}": ${kind} "${r}" not found`,
    },
    ctx.sources,
    ctx.warnings,
  );
  if (!data) return undefined;
  const value = data[keyRef.key];
  if (value !== undefined) return value;
  const secret = kind === 'secret';
  if (optional) {
    ctx.warnings.push({
      reason: secret ? ENV_REASONS.optionalSecretKeyNotFound : ENV_REASONS.optionalConfigMapKeyNotFound,
      message: `skipping optional envvar "${variable}": key "${keyRef.key}" does not exist in ${kind} "${keyRef.name}"`,
    });
    return undefined;
  }
  throw new EnvResolveError(
    secret ? ENV_REASONS.mandatorySecretKeyNotFound : ENV_REASONS.mandatoryConfigMapKeyNotFound,
    `${kind} "${keyRef.name}" doesn't contain the "${keyRef.key}" key required by pod ${ctx.pod.metadata?.name ?? ''}`,
  );
}
