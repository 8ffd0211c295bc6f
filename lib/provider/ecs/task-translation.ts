import { createHash } from 'node:crypto';
import type {
  ContainerDefinition,
  ContainerOverride,
  RegisterTaskDefinitionCommandInput,
} from '@aws-sdk/client-ecs';
import type { V1Pod } from '@kubernetes/client-node';
import type { FileProjection } from '../file-volumes.ts';
import {
  commandSecretProblems,
  containerDefinition,
  isTaskVolume,
  logStreamPrefix,
} from './container-definition.ts';
import { type PartitionedEnv, partitionEnv, type SecretValue } from './env-partition.ts';
import { FARGATE_MAX_CPU_UNITS, FARGATE_MAX_MEMORY_MIB, fargateSize, podResources } from './fargate-size.ts';
import { unsupportedFields } from './pod-support.ts';
import {
  podFileVolumes,
  SECRET_PART_CHARS,
  VOLUME_WRITER_NAME,
  type VolumeWriter,
  volumeWriter,
} from './volume-writer.ts';

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
  /** Per-pod environment (downward API values, in env and files), as RunTask's container overrides. */
  containerOverrides: ContainerOverride[];
  /**
   * A hash of the definition and overrides without the files of the pod's
   * file volumes: equal for the same pod whatever its ConfigMaps, Secrets
   * and labels hold (an update keeps the task, and its files, then).
   */
  shape: string;
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
  /** The image of the volume writer (busybox: `sh`, `base64`), for pods with file volumes. */
  volumeImage: string;
  /**
   * The files of the pod's file volumes as read, by volume name; absent:
   * translated without them (its shape only, see {@link TaskTranslation.shape}).
   */
  volumeFiles?: ReadonlyMap<string, readonly FileProjection[]>;
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
/** RegisterTaskDefinition accepts a task definition of at most 64 KiB. */
export const MAX_DEFINITION_CHARS = 65_536;

/**
 * Translates a pod (env resolved, see the provider contract).
 * @throws TaskTranslationError naming every field Fargate cannot honour, a
 *   pod larger than Fargate's largest task, per-pod values over RunTask's
 *   8 KiB of overrides, or file volumes over the task definition's 64 KiB.
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
  const writer = podVolumeWriter(pod, namespace, settings);
  // Every container of the pod waits for the volume writer: the first init container, or the app containers.
  const first = writer ? VOLUME_WRITER_NAME : undefined;
  const lastInit = inits.at(-1)?.name ?? first;
  const secrets: Array<{ parameter: string; value: SecretValue }> = [...(writer?.secrets ?? [])];
  const containerOverrides: ContainerOverride[] = [];
  if (writer && writer.overrideEnvironment.length > 0)
    containerOverrides.push({ name: VOLUME_WRITER_NAME, environment: writer.overrideEnvironment });
  const containers = [
    ...inits.map((c, i) => ({ c, role: 'init' as const, after: i > 0 ? inits[i - 1]?.name : first })),
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
    containerDefinitions: writer ? [writer.container, ...containers] : containers,
    ...(volumes.length > 0 ? { volumes } : {}),
  };
  checkSizes(definition, containerOverrides, writer);
  return {
    definition,
    family: `${settings.familyPrefix}-${definitionHash(definition)}`,
    secrets: uniqueBy(secrets, (s) => s.parameter),
    containerOverrides,
    shape: shapeHash(definition, containerOverrides),
  };
}

/** The volume writer of the pod's file volumes (volume-writer.ts), or undefined when it has none. */
function podVolumeWriter(
  pod: V1Pod,
  namespace: string,
  settings: TranslationSettings,
): VolumeWriter | undefined {
  return volumeWriter(podFileVolumes(pod), settings.volumeFiles, {
    namespace,
    image: settings.volumeImage,
    secretParameterName: settings.secretParameterName,
    logConfiguration: {
      logDriver: 'awslogs',
      options: {
        'awslogs-group': settings.logGroup,
        'awslogs-region': settings.region,
        'awslogs-stream-prefix': logStreamPrefix(namespace),
      },
    },
  });
}

/**
 * RunTask's 8 KiB of overrides and RegisterTaskDefinition's 64 KiB.
 * @throws TaskTranslationError naming what takes the room, with the sizes.
 */
function checkSizes(
  definition: TaskDefinitionShape,
  containerOverrides: readonly ContainerOverride[],
  writer: VolumeWriter | undefined,
): void {
  const overridesChars = JSON.stringify({ containerOverrides }).length;
  if (overridesChars > MAX_OVERRIDES_CHARS) {
    const files = writer?.bytes.override
      ? ` and downwardAPI files (${writer.bytes.override} bytes, base64)`
      : '';
    throw new TaskTranslationError([
      `the pod's own env values (downward API)${files} take ${overridesChars} characters, more than RunTask's ${MAX_OVERRIDES_CHARS} for overrides`,
    ]);
  }
  const definitionChars = JSON.stringify(definition).length;
  if (writer && definitionChars > MAX_DEFINITION_CHARS) {
    const { definition: inDefinition, secret } = writer.bytes;
    throw new TaskTranslationError([
      `spec.volumes: the pod's file volumes (ConfigMap files ${inDefinition} bytes, base64 in the task definition; Secret files ${secret} bytes, in SSM parameters of ${SECRET_PART_CHARS} characters each named there) make its task definition ${definitionChars} characters, more than ECS's ${MAX_DEFINITION_CHARS}`,
    ]);
  }
}

/**
 * The hash of a translation without the volume writer's files (its
 * environment, manifest included, its secrets and its override):
 * what an update compares to tell a changed pod from changed file contents.
 */
function shapeHash(definition: TaskDefinitionShape, overrides: readonly ContainerOverride[]): string {
  const strip = (c: ContainerDefinition): ContainerDefinition => {
    if (c.name !== VOLUME_WRITER_NAME) return c;
    const { environment: _e, secrets: _s, ...rest } = c;
    return rest;
  };
  const shape = {
    definition: { ...definition, containerDefinitions: (definition.containerDefinitions ?? []).map(strip) },
    overrides: overrides.filter((o) => o.name !== VOLUME_WRITER_NAME),
  };
  return createHash('sha256').update(canonicalJson(shape)).digest('hex').slice(0, 32);
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
