import { createHash } from 'node:crypto';
import type { ContainerOverride, RegisterTaskDefinitionCommandInput } from '@aws-sdk/client-ecs';
import type { V1Pod } from '@kubernetes/client-node';
import { commandSecretProblems, containerDefinition, isTaskVolume } from './container-definition.ts';
import { type PartitionedEnv, partitionEnv, type SecretValue } from './env-partition.ts';
import { FARGATE_MAX_CPU_UNITS, FARGATE_MAX_MEMORY_MIB, fargateSize, podResources } from './fargate-size.ts';
import { unsupportedFields } from './pod-support.ts';

/**
 * A pod as a Fargate task: the task definition (shared by every pod of the
 * same shape) and what is specific to this pod (its container overrides).
 * Pure: the same pod and settings always give the same definition, so its
 * content hash names its family and replicas register it once.
 */

/** The task definition a pod needs, without its family (derived from its content). */
export type TaskDefinitionShape = Omit<RegisterTaskDefinitionCommandInput, 'family'>;

export interface TaskTranslation {
  definition: TaskDefinitionShape;
  /** `<prefix>-<hash of definition>`: one family per distinct shape. */
  family: string;
  /** The Secret values the definition's `secrets` refer to, by parameter name: stored before it is used. */
  secrets: ReadonlyArray<{ parameter: string; value: SecretValue }>;
  /** Per-pod environment (downward API values), as RunTask's container overrides. */
  containerOverrides: ContainerOverride[];
}

/** What translation reads from the configuration. */
export interface TranslationSettings {
  familyPrefix: string;
  executionRoleArn: string;
  taskRoleArn?: string;
  logGroup: string;
  region: string;
  cpuArchitecture: 'X86_64' | 'ARM64';
  registryCredentials: Readonly<Record<string, string>>;
  /** The SSM parameter name of a Secret value (content-derived, so replicas share it). */
  secretParameterName: (value: SecretValue) => string;
}

/** A pod that cannot run as a Fargate task, with every reason. */
export class TaskTranslationError extends Error {
  override readonly name = 'TaskTranslationError';
  constructor(readonly reasons: readonly string[]) {
    super(`cannot run on Fargate: ${reasons.join('; ')}`);
  }
}

export function isTaskTranslationError(err: unknown): err is TaskTranslationError {
  return err instanceof TaskTranslationError;
}

/** RunTask accepts at most this many characters of overrides, JSON formatting included. */
export const MAX_OVERRIDES_CHARS = 8192;

/**
 * Translates a pod (env resolved, see the provider contract).
 * @throws TaskTranslationError naming every field Fargate cannot honour, a
 *   pod larger than Fargate's largest task, or per-pod values over RunTask's
 *   8 KiB of overrides.
 */
export function translatePod(pod: V1Pod, settings: TranslationSettings): TaskTranslation {
  const reasons = [
    ...unsupportedFields(pod),
    ...(pod.spec?.initContainers ?? []).flatMap((c) =>
      commandSecretProblems(`spec.initContainers[${c.name}]`, c),
    ),
    ...(pod.spec?.containers ?? []).flatMap((c) => commandSecretProblems(`spec.containers[${c.name}]`, c)),
  ];
  if (reasons.length > 0) throw new TaskTranslationError(reasons);
  const need = podResources(pod);
  const size = fargateSize(need.cpuUnits, need.memoryMiB);
  if (!size) {
    throw new TaskTranslationError([
      `the pod needs ${need.cpuUnits} CPU units and ${need.memoryMiB} MiB, more than Fargate's largest task (${FARGATE_MAX_CPU_UNITS} CPU units = 16 vCPU, ${FARGATE_MAX_MEMORY_MIB} MiB = 120 GiB)`,
    ]);
  }
  const namespace = pod.metadata?.namespace ?? 'default';
  const spec = pod.spec ?? { containers: [] };
  const inits = spec.initContainers ?? [];
  const lastInit = inits.at(-1)?.name;
  const secrets: Array<{ parameter: string; value: SecretValue }> = [];
  const containerOverrides: ContainerOverride[] = [];
  const containers = [
    ...inits.map((c, i) => ({ c, role: 'init' as const, after: i > 0 ? inits[i - 1]?.name : undefined })),
    ...spec.containers.map((c) => ({ c, role: 'app' as const, after: lastInit })),
  ].map(({ c, role, after }) => {
    const env: PartitionedEnv = partitionEnv(c.env ?? [], namespace);
    const refs = env.secrets.map((value) => {
      const parameter = settings.secretParameterName(value);
      secrets.push({ parameter, value });
      return { name: value.variable, valueFrom: parameter };
    });
    if (env.overrides.length > 0) containerOverrides.push({ name: c.name, environment: env.overrides });
    return containerDefinition(c, {
      pod,
      role,
      ...(after ? { after } : {}),
      environment: env.definition,
      secrets: refs,
      logGroup: settings.logGroup,
      region: settings.region,
      registryCredentials: settings.registryCredentials,
    });
  });
  const overridesChars = JSON.stringify({ containerOverrides }).length;
  if (overridesChars > MAX_OVERRIDES_CHARS) {
    throw new TaskTranslationError([
      `the pod's own env values (downward API) take ${overridesChars} characters, more than RunTask's ${MAX_OVERRIDES_CHARS} for overrides`,
    ]);
  }
  const volumes = (spec.volumes ?? [])
    .filter((v) => isTaskVolume(pod, v.name))
    .map((v) => ({ name: v.name }));
  const definition: TaskDefinitionShape = {
    requiresCompatibilities: ['FARGATE'],
    networkMode: 'awsvpc',
    cpu: String(size.cpu),
    memory: String(size.memory),
    runtimePlatform: { operatingSystemFamily: 'LINUX', cpuArchitecture: settings.cpuArchitecture },
    executionRoleArn: settings.executionRoleArn,
    ...(settings.taskRoleArn ? { taskRoleArn: settings.taskRoleArn } : {}),
    ...(spec.shareProcessNamespace ? { pidMode: 'task' as const } : {}),
    containerDefinitions: containers,
    ...(volumes.length > 0 ? { volumes } : {}),
  };
  return {
    definition,
    family: `${settings.familyPrefix}-${definitionHash(definition)}`,
    secrets: uniqueBy(secrets, (s) => s.parameter),
    containerOverrides,
  };
}

/** A content hash of a task definition: its canonical JSON (keys sorted), SHA-256, 32 hex digits. */
export function definitionHash(definition: TaskDefinitionShape): string {
  return createHash('sha256').update(canonicalJson(definition)).digest('hex').slice(0, 32);
}

/** JSON with object keys sorted at every level, so equal content gives equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
