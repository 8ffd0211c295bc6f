import type { ContainerDefinition, KeyValuePair } from '@aws-sdk/client-ecs';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import type { DownwardApiOptions } from '../../kube/downward-api.ts';
import { type FileProjection, type FileVolume, fileVolume, isFileVolume } from '../file-volumes.ts';
import { isAdmissionTokenProjection } from '../service-account-volume.ts';
import type { SecretValue } from './env-partition.ts';

/**
 * ConfigMap, Secret, downwardAPI and projected volumes on Fargate, which
 * can mount nothing but task volumes (empty bind mounts on the task's
 * ephemeral storage): a volume writer, a non-essential container that runs
 * first in the task (every container of the pod waits for it to exit 0,
 * `dependsOn` SUCCESS), mounts each file volume read-write and writes its
 * files as the kubelet's atomic writer lays them out (a timestamped
 * directory, `..data` linking to it, each name a link through `..data`),
 * each with its mode. The pod's containers mount the volumes read-only.
 *
 * The files reach the writer as its environment, base64: a ConfigMap's in
 * the task definition (as env from a ConfigMap is), the downward API's in
 * the RunTask override (they are the pod's own, as fieldRef env is), a
 * Secret's as SSM SecureString parameters its `secrets` name (as a Secret's
 * env is: the bytes are in no task definition, RunTask request, record or
 * log line), cut into parameters of at most 4096 characters (the standard
 * tier's size). A manifest in the definition says where each file goes.
 *
 * The files are written once, when the task starts: a later change of the
 * ConfigMap, Secret or the pod's labels does not reach them (a new task,
 * after a restart, writes them anew). Pure: the provider reads the objects.
 */

/** The writer's container name; a pod with file volumes may not use it. */
export const VOLUME_WRITER_NAME = 'svk-volumes';
/** Where the writer mounts the volumes: `<root>/<index>`. */
export const VOLUME_WRITER_ROOT = '/svk-volumes';
/** The manifest variable: one line per file, `<volume index> <octal mode> <variables or -> <base64 path>`. */
export const MANIFEST_VARIABLE = 'SVK_FILES';
/** The standard tier's largest SSM parameter value, in characters (a multiple of 4: each part is whole base64). */
export const SECRET_PART_CHARS = 4096;

/**
 * The writer's script (busybox `sh`, `base64`, `chmod`, `ln`), given the
 * root as `$1`. It never prints a file's content; `set -eu` makes any
 * failure its exit code, which keeps every container of the pod from
 * starting (the task stops).
 */
export const VOLUME_WRITER_SCRIPT = [
  'set -eu',
  'root="$1"',
  'ts="..$(date -u +%Y_%m_%d_%H_%M_%S).1"',
  'for d in "$root"/*; do mkdir -p "$d/$ts"; done',
  `printf '%s\\n' "$${MANIFEST_VARIABLE}" | while read -r vol mode vars path; do`,
  '  [ -n "$vol" ] || continue',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's own parameter expansion
  '  path="$(printf \'%s\' "$path" | base64 -d; echo .)"; path="${path%.}"',
  '  file="$root/$vol/$ts/$path"',
  '  mkdir -p "$(dirname "$file")"',
  '  if [ "$vars" = - ]; then : > "$file"; else',
  '    for v in $(echo "$vars" | tr , " "); do eval "printf \'%s\' \\"\\$$v\\""; done | base64 -d > "$file"',
  '  fi',
  '  chmod "$mode" "$file"',
  'done',
  'for d in "$root"/*; do',
  '  ln -s "$ts" "$d/..data"',
  '  for f in "$d/$ts"/* "$d/$ts"/.[!.]* "$d/$ts"/..?*; do',
  '    [ -e "$f" ] || [ -L "$f" ] || continue',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's own parameter expansion
  '    n="${f##*/}"; ln -s "..data/$n" "$d/$n"',
  '  done',
  'done',
].join('\n');

/** One file volume of the pod, as the writer serves it. */
export interface PodFileVolume {
  volume: V1Volume;
  plan: FileVolume;
}

/**
 * The pod's volumes the writer fills, in spec order: configMap, secret,
 * downwardAPI and projected ones, except the service-account token
 * projection a 1.21+ API server adds (not mounted, as before). Volumes whose
 * fields cannot be served are left out: pod-support refuses them. A
 * resourceFieldRef on a missing limit shows `options.allocatable`, as in env.
 */
export function podFileVolumes(pod: V1Pod, options: DownwardApiOptions = {}): PodFileVolume[] {
  const out: PodFileVolume[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    if (!isFileVolume(volume) || isAdmissionTokenProjection(volume, pod)) continue;
    const planned = fileVolume(volume, pod, options);
    if ('volume' in planned) out.push({ volume, plan: planned.volume });
  }
  return out;
}

/** What the writer needs of the translation. */
export interface WriterContext {
  namespace: string;
  image: string;
  /** The SSM parameter name of a Secret value (content-derived). */
  secretParameterName: (value: SecretValue) => string;
  logConfiguration: ContainerDefinition['logConfiguration'];
}

/** The writer of a pod: its container, its override, and the Secret parts to store first. */
export interface VolumeWriter {
  container: ContainerDefinition;
  /** The downward API files, as the writer's RunTask override (empty when none). */
  overrideEnvironment: KeyValuePair[];
  secrets: Array<{ parameter: string; value: SecretValue }>;
  /** Bytes of files by where they ride: for limits' messages. */
  bytes: { definition: number; override: number; secret: number };
}

/**
 * The writer for the pod's file volumes, their files as read (by volume
 * name; a volume without an entry is written empty, as when translating
 * only the task's shape), or undefined when the pod has none.
 */
export function volumeWriter(
  volumes: readonly PodFileVolume[],
  files: ReadonlyMap<string, readonly FileProjection[]> | undefined,
  ctx: WriterContext,
): VolumeWriter | undefined {
  if (volumes.length === 0) return undefined;
  const manifest: string[] = [];
  const environment: KeyValuePair[] = [];
  const overrideEnvironment: KeyValuePair[] = [];
  const secrets: VolumeWriter['secrets'] = [];
  const secretRefs: Array<{ name: string; valueFrom: string }> = [];
  const bytes = { definition: 0, override: 0, secret: 0 };
  volumes.forEach(({ volume }, v) => {
    (files?.get(volume.name) ?? []).forEach((file, f) => {
      const variable = `SVK_${v}_${f}`;
      const content = file.content.toString('base64');
      let vars: string[] = [];
      if (content.length > 0 && file.source === 'secret') {
        const name = secretName(volume, file);
        for (let part = 0; part * SECRET_PART_CHARS < content.length; part++) {
          const value: SecretValue = {
            variable: `${variable}_${part}`,
            namespace: ctx.namespace,
            secret: name,
            key: file.path.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100),
            value: content.slice(part * SECRET_PART_CHARS, (part + 1) * SECRET_PART_CHARS),
          };
          const parameter = ctx.secretParameterName(value);
          secrets.push({ parameter, value });
          secretRefs.push({ name: value.variable, valueFrom: parameter });
          vars.push(value.variable);
        }
        bytes.secret += file.content.length;
      } else if (content.length > 0) {
        (file.source === 'downwardAPI' ? overrideEnvironment : environment).push({
          name: variable,
          value: content,
        });
        vars = [variable];
        if (file.source === 'downwardAPI') bytes.override += file.content.length;
        else bytes.definition += file.content.length;
      }
      manifest.push(
        `${v} ${file.mode.toString(8)} ${vars.length > 0 ? vars.join(',') : '-'} ${Buffer.from(file.path).toString('base64')}`,
      );
    });
  });
  return {
    container: {
      name: VOLUME_WRITER_NAME,
      image: ctx.image,
      essential: false,
      entryPoint: ['sh', '-c'],
      command: [VOLUME_WRITER_SCRIPT, VOLUME_WRITER_NAME, VOLUME_WRITER_ROOT],
      environment: [{ name: MANIFEST_VARIABLE, value: manifest.join('\n') }, ...environment],
      ...(secretRefs.length > 0 ? { secrets: secretRefs } : {}),
      mountPoints: volumes.map(({ volume }, v) => ({
        sourceVolume: volume.name,
        containerPath: `${VOLUME_WRITER_ROOT}/${v}`,
        readOnly: false,
      })),
      stopTimeout: 2,
      ...(ctx.logConfiguration ? { logConfiguration: ctx.logConfiguration } : {}),
    },
    overrideEnvironment,
    secrets,
    bytes,
  };
}

/**
 * The Secret a file came from, for its parameter's name: the volume's
 * Secret, or, in a projected volume, the one source whose items or keys it
 * came from (the first Secret source when that cannot be told).
 */
function secretName(volume: V1Volume, file: FileProjection): string {
  if (volume.secret?.secretName) return volume.secret.secretName;
  const sources = (volume.projected?.sources ?? []).filter((s) => s.secret);
  const byItem = sources.find((s) => s.secret?.items?.some((i) => i.path === file.path));
  return (byItem ?? sources.find((s) => !s.secret?.items) ?? sources[0])?.secret?.name ?? 'projected';
}
