import type { FileProjection } from '../file-volumes.ts';
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
export function atomicLayout(files: readonly FileProjection[], timestampDir: string): TarEntry[] {
  const dirs = new Set<string>();
  for (const file of files) {
    const parts = file.path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  const visible = [...new Set(files.map((f) => f.path.split('/')[0] ?? ''))].sort();
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
    { type: 'symlink', name: DATA_DIR_NAME, target: timestampDir },
    ...visible.map((v): TarEntry => ({ type: 'symlink', name: v, target: `${DATA_DIR_NAME}/${v}` })),
  ];
}
