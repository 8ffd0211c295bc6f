import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Debian's busybox-static: one static binary, so a root filesystem of it needs nothing else. */
export const BUSYBOX = '/bin/busybox';

/**
 * Names the local images are tagged with: what `examples/` and the tests
 * use, and the Docker provider's default infra image, so that nothing is
 * ever pulled (there is no registry access here).
 */
export const BUSYBOX_TAGS = [
  'docker.io/library/busybox:latest',
  'docker.io/library/busybox:1.36',
  'public.ecr.aws/docker/library/busybox:1.36',
];
/**
 * The pod infra ("pause") image: the same busybox filesystem whose command
 * sleeps until it is signalled, under the name the Docker provider uses by
 * default. A stand-in for the real pause image, which it cannot pull here.
 */
export const PAUSE_TAG = 'registry.k8s.io/pause:3.10';

/** How one engine loads a root filesystem tarball as an image, and adds a name to an image. */
export interface ImageImporter {
  /** Imports `tarball` as `tag` with `change` (a Dockerfile instruction, e.g. `CMD [...]`) applied. */
  importTarball(tarball: string, tag: string, change: string): Promise<void>;
  tag(source: string, target: string): Promise<void>;
}

/**
 * Builds the images offline: a root filesystem of busybox and a symlink per
 * applet (sh, sleep, nc, httpd, wget...), packed with tar and imported
 * under each tag.
 */
export async function importBusyboxImages(workDir: string, importer: ImageImporter): Promise<void> {
  const rootfs = join(workDir, 'rootfs');
  const tarball = join(workDir, 'busybox.tar');
  rmSync(rootfs, { recursive: true, force: true });
  await writeBusyboxRootfs(rootfs);
  await execFileAsync('tar', ['-C', rootfs, '-cf', tarball, '.']);
  const [first, ...rest] = BUSYBOX_TAGS;
  if (!first) return;
  await importer.importTarball(tarball, first, 'CMD ["/bin/sh"]');
  for (const tag of rest) await importer.tag(first, tag);
  await importer.importTarball(tarball, PAUSE_TAG, 'CMD ["/bin/sleep", "2147483647"]');
  rmSync(rootfs, { recursive: true, force: true });
  rmSync(tarball, { force: true });
}

/** Imports with the podman CLI (`env` addresses the instance). */
export function podmanImporter(env: NodeJS.ProcessEnv): ImageImporter {
  return {
    importTarball: async (tarball, tag, change) => {
      await execFileAsync('podman', ['import', '--quiet', '--change', change, tarball, tag], { env });
    },
    tag: async (source, target) => {
      await execFileAsync('podman', ['tag', source, target], { env });
    },
  };
}

/** Lays out a root filesystem in `rootfs` (created): /bin/busybox, a symlink per applet beside it, and empty /tmp, /etc, /proc, /sys, /dev. */
export async function writeBusyboxRootfs(rootfs: string): Promise<void> {
  for (const sub of ['bin', 'tmp', 'etc', 'proc', 'sys', 'dev'])
    mkdirSync(join(rootfs, sub), { recursive: true });
  await execFileAsync('cp', [BUSYBOX, join(rootfs, 'bin', 'busybox')]);
  const { stdout } = await execFileAsync(BUSYBOX, ['--list']);
  for (const applet of stdout.split('\n').filter((a) => a && a !== 'busybox')) {
    symlinkSync('busybox', join(rootfs, 'bin', applet));
  }
}
