import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_PROBER_IMAGE } from '../provider/docker/settings.ts';
import type { ImageImporter } from './busybox-image.ts';

const execFileAsync = promisify(execFile);

/**
 * The Docker provider's prober image for local engines, built offline: the
 * node binary this process runs and the shared libraries it loads, packed
 * as a root filesystem and imported under the default prober image's name
 * (SVK_DOCKER_PROBER_IMAGE), so that nothing is pulled. The prober runs
 * `node` and nothing else. The tarball is built once per Node version and
 * kept in the project's cache (about 130 MB).
 */
export async function importNodeImage(importer: ImageImporter): Promise<void> {
  await importer.importTarball(await nodeRootfsTarball(), DEFAULT_PROBER_IMAGE, 'ENTRYPOINT ["node"]');
}

const CACHE = join(homedir(), '.cache', 'serverless-virtual-kubelet', 'images');

async function nodeRootfsTarball(): Promise<string> {
  const tarball = join(CACHE, `node-${process.version}-${process.arch}.tar`);
  if (existsSync(tarball)) return tarball;
  const work = join(CACHE, `node-rootfs-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  try {
    for (const sub of ['usr/local/bin', 'tmp', 'etc', 'proc', 'sys', 'dev', 'run'])
      mkdirSync(join(work, sub), { recursive: true });
    copyFileSync(process.execPath, join(work, 'usr/local/bin/node'));
    for (const library of await sharedLibraries(process.execPath)) {
      mkdirSync(join(work, dirname(library)), { recursive: true });
      copyFileSync(library, join(work, library));
    }
    const partial = `${tarball}.${process.pid}`;
    await execFileAsync('tar', ['-C', work, '-cf', partial, '.']);
    renameSync(partial, tarball);
    return tarball;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The absolute paths of the libraries `binary` loads, the dynamic loader included (ldd). */
async function sharedLibraries(binary: string): Promise<string[]> {
  const { stdout } = await execFileAsync('ldd', [binary]);
  return stdout
    .split('\n')
    .map((line) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)?.[1])
    .filter((path): path is string => path !== undefined);
}
