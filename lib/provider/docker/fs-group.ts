import type { TarEntry } from './tar-archive.ts';

/**
 * A pod's fsGroup on the files the provider writes, as the kubelet's
 * SetVolumeOwnership (pkg/volume/volume_linux.go) leaves them: every file
 * and directory in group fsGroup, files given the group's read bits
 * (read-only volumes: configMap, secret, downwardAPI, projected) or read
 * and write bits (emptyDir), directories those plus the execute bits and
 * setgid, so that what is created in them later is in the group too.
 * Symlinks are left as they are. Every container of the pod has fsGroup
 * among its supplementary groups (pod-plan.ts).
 */

const READ_ONLY_MASK = 0o440;
const READ_WRITE_MASK = 0o660;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** The mode the kubelet gives a file or directory of a volume with an fsGroup. */
export function fsGroupMode(mode: number, dir: boolean, readOnly: boolean): number {
  const mask = readOnly ? READ_ONLY_MASK : READ_WRITE_MASK;
  return mode | mask | (dir ? SETGID | EXEC_MASK : 0);
}

/** The entries in group `fsGroup`, with the kubelet's modes; unchanged without one. */
export function withFsGroup(
  entries: readonly TarEntry[],
  fsGroup: number | undefined,
  readOnly: boolean,
): TarEntry[] {
  if (fsGroup === undefined) return [...entries];
  return entries.map((entry) =>
    entry.type === 'symlink'
      ? entry
      : { ...entry, gid: fsGroup, mode: fsGroupMode(entry.mode, entry.type === 'dir', readOnly) },
  );
}

/**
 * The `./` entry that sets a volume's own directory as the kubelet leaves an
 * emptyDir's (and the tmpfs under a file volume): mode 0777, and with an
 * fsGroup, in its group with setgid.
 */
export function volumeRootEntry(fsGroup: number | undefined): TarEntry {
  const root: TarEntry = { type: 'dir', name: '.', mode: 0o777 };
  return withFsGroup([root], fsGroup, false)[0] ?? root;
}
