import { createHash } from 'node:crypto';
import type {
  V1Container,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1ServiceAccountTokenProjection,
  V1Volume,
} from '@kubernetes/client-node';
import {
  DownwardApiError,
  type DownwardApiOptions,
  fieldValue,
  resourceFieldValue,
} from '../kube/downward-api.ts';
import { configKeyProblem, filePathProblem } from './file-volume-names.ts';
import { plannedToken, type TokenSource, tokenKey } from './projected-token.ts';

/**
 * ConfigMap, Secret, downwardAPI and projected volumes as the kubelet fills
 * them (pkg/volume/configmap, secret, downwardapi, projected): what a volume
 * asks for, checked and recorded without any data (a plan record is
 * persisted: it must never hold a Secret's bytes), then, once the objects are
 * read, the files it holds. Pure: the provider reads and writes.
 */

/** The API server's default file mode of these volumes (0644). */
export const DEFAULT_FILE_MODE = 0o644;

/** One item of a ConfigMap or Secret source: a key written at a path, with its own mode or the volume's. */
export interface KeyItem {
  key: string;
  path: string;
  mode?: number;
}

/** One source of a file volume, without data. */
export type FileSource =
  | { kind: 'configMap' | 'secret'; name: string; optional: boolean; items?: KeyItem[] }
  /**
   * Downward API items, their values taken from the pod when planned (metadata and resources only);
   * `fieldPath` for those that may change (labels, annotations), which an update takes from the pod again.
   */
  | { kind: 'downwardAPI'; items: DownwardItem[] }
  /** A projected service account token (projected-token.ts). */
  | TokenSource;

export interface DownwardItem {
  path: string;
  mode?: number;
  value: string;
  fieldPath?: string;
}

/** A configMap, secret, downwardAPI or projected volume: its sources and the mode of files without their own. */
export interface FileVolume {
  defaultMode: number;
  sources: FileSource[];
}

/** One file of a volume, as the kubelet's atomic writer takes it (a FileProjection). */
export interface FileProjection {
  path: string;
  mode: number;
  content: Buffer;
  /** The kind of source the file came from (a Secret's must be kept secret). */
  source?: FileSource['kind'];
}

/** A ConfigMap's or Secret's data as read: keys to bytes; undefined when it does not exist. */
export type SourceData = ReadonlyMap<string, Buffer> | undefined;

/** Whether the volume is one of the kinds this module fills. */
export function isFileVolume(volume: V1Volume): boolean {
  return Boolean(volume.configMap || volume.secret || volume.downwardAPI || volume.projected);
}

/**
 * The volume's plan, or the reasons it cannot be served, each naming its
 * field (`spec.volumes[v].configMap.items[0].path: ...`). Only the
 * downwardAPI fields a volume may hold (metadata and resources) are taken.
 * A projected serviceAccountToken source is planned by projected-token.ts.
 */
export function fileVolume(
  volume: V1Volume,
  pod: V1Pod,
  options: DownwardApiOptions = {},
): { volume: FileVolume } | { reasons: string[] } {
  const at = `spec.volumes[${volume.name}]`;
  const check = new VolumeCheck(pod, options);
  const sources: FileSource[] = [];
  let defaultMode: number | undefined;
  if (volume.configMap) {
    const cm = volume.configMap;
    defaultMode = check.mode(`${at}.configMap.defaultMode`, cm.defaultMode);
    sources.push(check.keySource(`${at}.configMap`, 'configMap', cm.name, cm.optional, cm.items));
  } else if (volume.secret) {
    const secret = volume.secret;
    defaultMode = check.mode(`${at}.secret.defaultMode`, secret.defaultMode);
    sources.push(
      check.keySource(
        `${at}.secret`,
        'secret',
        secret.secretName,
        secret.optional,
        secret.items,
        'secretName',
      ),
    );
  } else if (volume.downwardAPI) {
    defaultMode = check.mode(`${at}.downwardAPI.defaultMode`, volume.downwardAPI.defaultMode);
    sources.push(check.downward(`${at}.downwardAPI`, volume.downwardAPI.items));
  } else if (volume.projected) {
    defaultMode = check.mode(`${at}.projected.defaultMode`, volume.projected.defaultMode);
    (volume.projected.sources ?? []).forEach((s, i) => {
      const f = `${at}.projected.sources[${i}]`;
      if (s.configMap)
        sources.push(
          check.keySource(
            `${f}.configMap`,
            'configMap',
            s.configMap.name,
            s.configMap.optional,
            s.configMap.items,
          ),
        );
      else if (s.secret)
        sources.push(
          check.keySource(`${f}.secret`, 'secret', s.secret.name, s.secret.optional, s.secret.items),
        );
      else if (s.downwardAPI) sources.push(check.downward(`${f}.downwardAPI`, s.downwardAPI.items));
      else if (s.serviceAccountToken)
        sources.push(check.token(`${f}.serviceAccountToken`, s.serviceAccountToken));
      else check.refuse(f, `${Object.keys(s).join(', ') || 'an empty source'} is not supported`);
    });
  } else {
    check.refuse(at, 'not a configMap, secret, downwardAPI or projected volume');
  }
  if (check.reasons.length > 0) return { reasons: check.reasons };
  return { volume: { defaultMode: defaultMode ?? DEFAULT_FILE_MODE, sources } };
}

/** The checks of one volume's fields, collecting every reason it cannot be served. */
class VolumeCheck {
  readonly reasons: string[] = [];

  constructor(
    private readonly pod: V1Pod,
    private readonly options: DownwardApiOptions,
  ) {}

  refuse(field: string, why: string): void {
    this.reasons.push(`${field}: ${why}`);
  }

  mode(field: string, value: number | undefined): number | undefined {
    if (value === undefined) return undefined;
    if (!Number.isInteger(value) || value < 0 || value > 0o777)
      this.refuse(field, `must be a file mode between 0 and 0777 (511), not ${value}`);
    return value;
  }

  keySource(
    field: string,
    kind: 'configMap' | 'secret',
    name: string | undefined,
    optional: boolean | undefined,
    items: V1KeyToPath[] | undefined,
    nameField = 'name',
  ): FileSource {
    if (!name) this.refuse(`${field}.${nameField}`, 'required');
    const checked = items?.map((item, i): KeyItem => {
      const f = `${field}.items[${i}]`;
      const keyProblem = configKeyProblem(item.key);
      if (keyProblem) this.refuse(`${f}.key`, keyProblem);
      const pathProblem = filePathProblem(item.path);
      if (pathProblem) this.refuse(`${f}.path`, pathProblem);
      const m = this.mode(`${f}.mode`, item.mode);
      return { key: item.key, path: item.path, ...(m !== undefined ? { mode: m } : {}) };
    });
    return { kind, name: name ?? '', optional: optional ?? false, ...(checked ? { items: checked } : {}) };
  }

  token(field: string, source: V1ServiceAccountTokenProjection): TokenSource {
    const pathProblem = filePathProblem(source.path);
    if (pathProblem) this.refuse(`${field}.path`, pathProblem);
    const { token, problem } = plannedToken(source, this.pod);
    if (problem) this.refuse(`${field}.expirationSeconds`, problem);
    return token;
  }

  downward(field: string, items: V1DownwardAPIVolumeFile[] | undefined): FileSource {
    return {
      kind: 'downwardAPI',
      items: (items ?? []).map((item, i) => {
        const f = `${field}.items[${i}]`;
        const pathProblem = filePathProblem(item.path);
        if (pathProblem) this.refuse(`${f}.path`, pathProblem);
        const m = this.mode(`${f}.mode`, item.mode);
        const fieldPath = item.fieldRef?.fieldPath;
        return {
          path: item.path,
          ...(m !== undefined ? { mode: m } : {}),
          value: this.downwardValue(f, item),
          ...(fieldPath && MUTABLE_FIELD_PATH.test(fieldPath) ? { fieldPath } : {}),
        };
      }),
    };
  }

  private downwardValue(f: string, item: V1DownwardAPIVolumeFile): string {
    try {
      if (item.fieldRef) {
        const path = item.fieldRef.fieldPath;
        if (VOLUME_FIELD_PATH.test(path)) return fieldValue(this.pod, path, this.options);
        this.refuse(`${f}.fieldRef.fieldPath`, `"${path}" is not available in a downwardAPI volume`);
      } else if (item.resourceFieldRef) {
        const ref = item.resourceFieldRef;
        if (ref.containerName)
          return resourceFieldValue(this.pod, undefined, ref, `${f}.resourceFieldRef`, this.options);
        this.refuse(`${f}.resourceFieldRef.containerName`, 'required in a volume');
      } else this.refuse(f, 'needs a fieldRef or a resourceFieldRef');
    } catch (err) {
      if (!(err instanceof DownwardApiError)) throw err;
      this.reasons.push(err.message);
    }
    return '';
  }
}

/** The fieldPaths a downwardAPI volume may hold (the API's validVolumeDownwardAPIFieldPathExpressions). */
const VOLUME_FIELD_PATH =
  /^(metadata\.(name|namespace|uid|labels|annotations)|metadata\.(labels|annotations)\['[^']*'\])$/;

/** The fieldPaths whose value may change while the pod runs. */
const MUTABLE_FIELD_PATH = /^metadata\.(labels|annotations)/;

/** Whether the volume shows labels or annotations, which an update takes from the pod again. */
export function readsPodMetadata(volume: FileVolume): boolean {
  return volume.sources.some((s) => s.kind === 'downwardAPI' && s.items.some((i) => i.fieldPath));
}

/** The volume with its labels and annotations as `pod` has them now. */
export function withPodMetadata(volume: FileVolume, pod: V1Pod): FileVolume {
  return {
    ...volume,
    sources: volume.sources.map((s) =>
      s.kind === 'downwardAPI'
        ? {
            ...s,
            items: s.items.map((i) => (i.fieldPath ? { ...i, value: fieldValue(pod, i.fieldPath) } : i)),
          }
        : s,
    ),
  };
}

/**
 * A digest of a volume's files (paths, modes, contents): what tells a
 * changed payload from the one written. Kept in the timestamped directory's
 * name, beside the files it stands for, never elsewhere.
 */
export function payloadDigest(files: readonly FileProjection[]): string {
  const hash = createHash('sha256');
  for (const f of files) {
    hash.update(`${f.path}\0${f.mode}\0${f.content.length}\0`);
    hash.update(f.content);
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The ConfigMaps and Secrets a volume reads, by `configMap/<name>` or
 * `secret/<name>` (see {@link sourceKey}).
 */
export function sourcesToRead(volume: FileVolume): Array<{ kind: 'configMap' | 'secret'; name: string }> {
  const seen = new Map<string, { kind: 'configMap' | 'secret'; name: string }>();
  for (const s of volume.sources)
    if (s.kind === 'configMap' || s.kind === 'secret')
      seen.set(sourceKey(s.kind, s.name), { kind: s.kind, name: s.name });
  return [...seen.values()];
}

export function sourceKey(kind: 'configMap' | 'secret', name: string): string {
  return `${kind}/${name}`;
}

/**
 * The volume's files from the objects read (by {@link sourceKey}) and the
 * tokens fetched (by {@link tokenKey}, under `token`), as the
 * kubelet's MakePayload makes them: every key of a source without items,
 * else the items, each with its mode or the volume's default. A missing
 * optional object adds nothing, nor does an optional one's missing key.
 * Otherwise the error is the kubelet's wording, which its FailedMount Event
 * carries (`configmap "x" not found`, `configmap references non-existent
 * config key: k`); it names objects and keys, never data.
 */
export function volumePayload(
  volume: FileVolume,
  data: ReadonlyMap<string, SourceData>,
): { files: FileProjection[] } | { error: string } {
  const files = new Map<string, FileProjection>();
  for (const source of volume.sources) {
    if (source.kind === 'downwardAPI') {
      for (const item of source.items)
        files.set(item.path, {
          path: item.path,
          mode: item.mode ?? volume.defaultMode,
          content: Buffer.from(item.value),
          source: 'downwardAPI',
        });
      continue;
    }
    if (source.kind === 'serviceAccountToken') {
      const token = data.get(tokenKey(source.path))?.get('token');
      // The caller fetched every token or gave up with the TokenRequest's error.
      if (!token) return { error: `failed to fetch token for ${source.path}` };
      files.set(source.path, { path: source.path, mode: source.mode ?? volume.defaultMode, content: token });
      continue;
    }
    const found = data.get(sourceKey(source.kind, source.name));
    const noun = source.kind === 'configMap' ? 'configmap' : 'secret';
    if (!found) {
      if (source.optional) continue;
      return { error: `${noun} "${source.name}" not found` };
    }
    const items = source.items ?? [...found.keys()].sort().map((key) => ({ key, path: key }) as KeyItem);
    for (const item of items) {
      const content = found.get(item.key);
      if (content === undefined) {
        if (source.optional) continue;
        return {
          error:
            source.kind === 'configMap'
              ? `configmap references non-existent config key: ${item.key}`
              : `references non-existent secret key: ${item.key}`,
        };
      }
      files.set(item.path, {
        path: item.path,
        mode: item.mode ?? volume.defaultMode,
        content,
        source: source.kind,
      });
    }
  }
  return { files: [...files.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
}

/**
 * A container's subPath for a mount: `subPath`, or `subPathExpr` with
 * `$(VAR)` expanded from the container's env (values resolved), checked as
 * the kubelet checks it (relative, no `..` element); undefined for none.
 */
export function mountSubPath(
  mount: { subPath?: string; subPathExpr?: string },
  container: Pick<V1Container, 'env'>,
  expand: (input: string, lookup: (name: string) => string | undefined) => string,
): { subPath?: string } | { problem: string } {
  if (mount.subPath && mount.subPathExpr)
    return { problem: 'subPath and subPathExpr are mutually exclusive' };
  let subPath = mount.subPath;
  if (mount.subPathExpr) {
    const env = new Map((container.env ?? []).map((e) => [e.name, e.value ?? '']));
    subPath = expand(mount.subPathExpr, (name) => env.get(name));
  }
  if (!subPath) return {};
  if (subPath.startsWith('/')) return { problem: `must be a relative path, not "${subPath}"` };
  if (subPath.split('/').includes('..')) return { problem: `must not contain a ".." element: "${subPath}"` };
  return {
    subPath: subPath
      .split('/')
      .filter((p) => p !== '' && p !== '.')
      .join('/'),
  };
}
