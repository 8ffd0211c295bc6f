import type { FileProjection } from '../file-volumes.ts';
import { volumeRootEntry, withFsGroup } from './fs-group.ts';
import type { TarEntry } from './tar-archive.ts';

/**
 * A file volume's layout as the kubelet's atomic writer makes it
 * (pkg/volume/util/atomic_writer.go): the files in a timestamped directory
 * `..<timestamp>`, a `..data` symlink to it, and each user-visible name
 * (the first element of every path) a symlink through `..data`. A reader
 * that opens `name` always goes through `..data`, so swapping `..data`
 * for a link to a new directory changes every file at once.
 */

export const DATA_DIR_NAME = '..data';
/** The swap's exit code when a concurrent swap took its directory: nothing done. */
export const SWAP_STOOD_DOWN = 3;
/** The new link an update writes beside `..data`, then renames over it. */
export const NEW_DATA_DIR_NAME = '..data_tmp';

/** The atomic writer's timestamped directory name (`..2006_01_02_15_04_05.<suffix>`). */
export function timestampDirName(now: Date, suffix: string): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const t = `${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}`;
  return `..${t}.${suffix}`;
}

/**
 * The archive entries of a first write into an empty volume: the
 * timestamped directory with its subdirectories (0755) and files (each its
 * mode), then `..data`, then the user-visible links; in that order, so that
 * a link is never there before what it points at.
 */
export function atomicLayout(
  files: readonly FileProjection[],
  timestampDir: string,
  /** The pod's fsGroup: the volume, its directories and files in its group (fs-group.ts). */
  fsGroup?: number,
): TarEntry[] {
  return [
    ...(fsGroup !== undefined ? [volumeRootEntry(fsGroup)] : []),
    ...withFsGroup(timestampedFiles(files, timestampDir), fsGroup, true),
    { type: 'symlink', name: DATA_DIR_NAME, target: timestampDir },
    ...visibleNames(files).map(
      (v): TarEntry => ({ type: 'symlink', name: v, target: `${DATA_DIR_NAME}/${v}` }),
    ),
  ];
}

/**
 * The archive entries of an update: the new timestamped directory and
 * `..data_tmp` linking to it; `..data` and the visible names are left to
 * the swap (a rename of `..data_tmp` over `..data`, then the links of new
 * names made and those of names gone removed), which an archive cannot do.
 */
export function updateLayout(
  files: readonly FileProjection[],
  timestampDir: string,
  fsGroup?: number,
): TarEntry[] {
  return [
    ...withFsGroup(timestampedFiles(files, timestampDir), fsGroup, true),
    { type: 'symlink', name: NEW_DATA_DIR_NAME, target: timestampDir },
  ];
}

/** The user-visible names: the first element of every path, sorted. */
export function visibleNames(files: readonly FileProjection[]): string[] {
  return [...new Set(files.map((f) => f.path.split('/')[0] ?? ''))].sort();
}

/** The digest a timestamped directory's name ends in (see timestampDirName), or undefined. */
export function digestOf(timestampDir: string): string | undefined {
  return /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.([0-9a-f]+)$/.exec(timestampDir)?.[1];
}

function timestampedFiles(files: readonly FileProjection[], timestampDir: string): TarEntry[] {
  const dirs = new Set<string>();
  for (const file of files) {
    const parts = file.path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return [
    { type: 'dir', name: timestampDir, mode: 0o755 },
    ...[...dirs].sort().map((d): TarEntry => ({ type: 'dir', name: `${timestampDir}/${d}`, mode: 0o755 })),
    ...files.map(
      (f): TarEntry => ({
        type: 'file',
        name: `${timestampDir}/${f.path}`,
        mode: f.mode,
        content: f.content,
      }),
    ),
  ];
}

/**
 * The swap of an update, as a busybox `sh` runs it in the volume (mounted at
 * `/v`), with the new timestamped directory and the new visible names as
 * arguments: `..data_tmp` renamed over `..data` (one rename(2): a reader
 * sees the old files or the new ones, never a mix), then the links of new
 * names made, those of names gone and the old timestamped directories
 * removed, as the atomic writer's steps 9 to 11 do.
 */
export function swapCommand(timestampDir: string, names: readonly string[], root = '/v'): string[] {
  const script = [
    `cd '${root.replaceAll("'", "'\\''")}' || exit 1`,
    'new="$1"; shift',
    // A concurrent swap (another invocation) may have taken this one's directory: leave it to that one.
    `[ -d "$new" ] && [ "$(readlink ${NEW_DATA_DIR_NAME})" = "$new" ] || exit ${SWAP_STOOD_DOWN}`,
    `mv -T ${NEW_DATA_DIR_NAME} ${DATA_DIR_NAME} || exit 1`,
    `for name in "$@"; do [ -L "$name" ] || ln -s "${DATA_DIR_NAME}/$name" "$name"; done`,
    'for entry in * .[!.]* ..?*; do',
    '  [ -L "$entry" ] || [ -e "$entry" ] || continue',
    `  case "$entry" in ${DATA_DIR_NAME}|${NEW_DATA_DIR_NAME}|"$new") continue;; ..[0-9]*) rm -rf "$entry"; continue;; esac`,
    '  keep=no; for name in "$@"; do [ "$entry" = "$name" ] && keep=yes; done',
    '  [ "$keep" = yes ] || rm -f "$entry"',
    'done',
    'exit 0',
  ].join('\n');
  return ['sh', '-c', script, 'swap', timestampDir, ...names];
}
