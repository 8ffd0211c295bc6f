/** Where the control-plane binaries are, and whether they are there. */
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const KUBE_VERSION = 'v1.20.2';
const KUBE_BINARIES = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
/** Debian's etcd-server package puts it here. */
export const DEFAULT_ETCD = '/usr/bin/etcd';

/**
 * Directory holding the cached control-plane binaries, as built by
 * `scripts/ensure-kube.sh` (same `SVK_CACHE_DIR` override).
 */
export function binDir(): string {
  const cache = process.env.SVK_CACHE_DIR ?? join(homedir(), '.cache', 'serverless-virtual-kubelet');
  return join(cache, `kube-${KUBE_VERSION}`);
}

/** True when kube-apiserver, kube-controller-manager, kube-scheduler (in `dir`) and etcd are executable files. */
export function controlPlaneBinariesPresent(dir: string = binDir(), etcd: string = DEFAULT_ETCD): boolean {
  return missingBinary(dir, etcd) === undefined;
}

/** The first of etcd and the kube binaries in `dir` that is not an executable file, if any. */
export function missingBinary(dir: string, etcd: string): string | undefined {
  return [etcd, ...KUBE_BINARIES.map((b) => join(dir, b))].find((path) => !isExecutableFile(path));
}

function isExecutableFile(path: string): boolean {
  try {
    const st = statSync(path);
    return st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}
