/**
 * The images the [NodeConformance] specs run, made offline under the names
 * the e2e suite of v1.20.2 asks for (test/utils/image/manifest.go), with
 * what their own Dockerfiles give them (test/images/<name>/Dockerfile) as
 * far as the specs use it:
 *
 * - busybox:1.29: Debian's busybox-static, the same root filesystem as the
 *   project's busybox images.
 * - agnhost:2.21: the `agnhost` binary built from the tree (static) at
 *   /agnhost, /agnhost-2 linking to it (the entrypoint specs), /uploads
 *   (netexec), porter's localhost.crt and .key, `ENTRYPOINT ["/agnhost"]`,
 *   `CMD ["pause"]`; of what the Dockerfile installs from Alpine, the shell,
 *   `nc` and the other tools as busybox applets, `curl` and `bash` as
 *   Debian's binaries with their shared libraries (the lifecycle-hook specs
 *   call `curl`). dig, iperf, ss and coredns are left out: no
 *   [NodeConformance] spec calls them.
 * - pause:3.2: build/pause/linux/pause.c compiled static, `ENTRYPOINT ["/pause"]`.
 * - nonewprivs:1.0: the tree's `nnp` (prints its effective uid), setuid
 *   root at /usr/local/bin/nnp on busybox, `CMD ["nnp"]`.
 */
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { writeBusyboxRootfs } from '../../lib/local/busybox-image.ts';

const execFileAsync = promisify(execFile);

export const IMAGES = {
  busybox: 'docker.io/library/busybox:1.29',
  agnhost: 'k8s.gcr.io/e2e-test-images/agnhost:2.21',
  pause: 'k8s.gcr.io/pause:3.2',
  nonewprivs: 'gcr.io/kubernetes-e2e-test-images/nonewprivs:1.0',
} as const;

/** What the images are made of: binaries built by scripts/ensure-k8s-conformance.sh, and the source tree. */
export interface ImageSources {
  /** Holds agnhost, nonewprivs and pause. */
  binDir: string;
  /** The unpacked kubernetes source tree (test/images/agnhost/porter's certificates). */
  sourceTree: string;
}

const PATH_ENV = 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Imports every image into the Podman instance that `podmanEnv` addresses,
 * which already has the project's busybox images (lib/local/podman.ts).
 */
export async function importTestImages(
  workDir: string,
  sources: ImageSources,
  podmanEnv: NodeJS.ProcessEnv,
): Promise<void> {
  const podman = (args: string[]) => execFileAsync('podman', args, { env: podmanEnv });
  await podman(['tag', 'docker.io/library/busybox:latest', IMAGES.busybox]);
  const build = async (
    name: string,
    tag: string,
    changes: string[],
    fill: (rootfs: string) => Promise<void>,
  ) => {
    const rootfs = join(workDir, `${name}-rootfs`);
    const tarball = join(workDir, `${name}.tar`);
    rmSync(rootfs, { recursive: true, force: true });
    mkdirSync(rootfs, { recursive: true });
    await fill(rootfs);
    await execFileAsync('tar', ['--numeric-owner', '-C', rootfs, '-cf', tarball, '.']);
    await podman(['import', '--quiet', ...changes.flatMap((c) => ['--change', c]), tarball, tag]);
    rmSync(rootfs, { recursive: true, force: true });
    rmSync(tarball, { force: true });
  };
  await build('agnhost', IMAGES.agnhost, [PATH_ENV, 'ENTRYPOINT ["/agnhost"]', 'CMD ["pause"]'], (rootfs) =>
    fillAgnhost(rootfs, sources),
  );
  await build('pause', IMAGES.pause, ['ENTRYPOINT ["/pause"]'], async (rootfs) => {
    copyFileSync(join(sources.binDir, 'pause'), join(rootfs, 'pause'));
    chmodSync(join(rootfs, 'pause'), 0o755);
  });
  await build('nonewprivs', IMAGES.nonewprivs, [PATH_ENV, 'CMD ["nnp"]'], async (rootfs) => {
    await writeBusyboxRootfs(rootfs);
    const nnp = join(rootfs, 'usr', 'local', 'bin', 'nnp');
    mkdirSync(dirname(nnp), { recursive: true });
    copyFileSync(join(sources.binDir, 'nonewprivs'), nnp);
    // The Dockerfile's `chmod +s`: the spec checks that no_new_privs keeps it from raising the uid.
    chmodSync(nnp, 0o6755);
  });
}

async function fillAgnhost(rootfs: string, sources: ImageSources): Promise<void> {
  await writeBusyboxRootfs(rootfs);
  copyFileSync(join(sources.binDir, 'agnhost'), join(rootfs, 'agnhost'));
  chmodSync(join(rootfs, 'agnhost'), 0o755);
  symlinkSync('agnhost', join(rootfs, 'agnhost-2'));
  mkdirSync(join(rootfs, 'uploads'));
  const porter = join(sources.sourceTree, 'test', 'images', 'agnhost', 'porter');
  for (const file of ['localhost.crt', 'localhost.key']) copyFileSync(join(porter, file), join(rootfs, file));
  for (const binary of ['/usr/bin/curl', '/bin/bash']) await copyWithLibraries(binary, rootfs);
}

/** Copies a dynamically linked binary and every shared library `ldd` resolves for it to the same paths under `rootfs`. */
async function copyWithLibraries(binary: string, rootfs: string): Promise<void> {
  const { stdout } = await execFileAsync('ldd', [binary]);
  const libraries = [...stdout.matchAll(/(\/\S+) \(0x[0-9a-f]+\)/g)].map((m) => m[1] ?? '');
  for (const file of [binary, ...libraries.filter(Boolean)]) {
    const target = join(rootfs, file);
    mkdirSync(dirname(target), { recursive: true });
    // Never through a busybox applet's symlink of the same name, which would overwrite busybox itself.
    rmSync(target, { force: true });
    // cp -L: the library's symlink chain ends in the file the loader needs under this name.
    await execFileAsync('cp', ['-L', file, target]);
  }
}
