import type { IncomingMessage } from 'node:http';
import type Docker from 'dockerode';
import { isEngineNotFound } from './engine-errors.ts';

/**
 * Single files in and out of containers through the engine's archive
 * endpoints (`PUT`/`GET /containers/{id}/archive`), which both engines
 * serve: a tar archive of one entry each way.
 */

/** The content of `path` in the container, or undefined when the container or the file is not there. */
export async function readContainerFile(
  docker: Docker,
  container: string,
  path: string,
  signal?: AbortSignal,
): Promise<Buffer | undefined> {
  try {
    const stream = await docker
      .getContainer(container)
      .getArchive({ path, ...(signal ? { abortSignal: signal } : {}) });
    const chunks: Buffer[] = [];
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
    return firstTarEntry(Buffer.concat(chunks));
  } catch (err) {
    if (isEngineNotFound(err)) return undefined;
    throw err;
  }
}

/** Creates an empty file `name` in directory `dir` of the container, writable by every user (0666). */
export async function createEmptyFile(
  docker: Docker,
  container: string,
  dir: string,
  name: string,
): Promise<void> {
  await docker.getContainer(container).putArchive(emptyFileTar(name), { path: dir });
}

/** The content of a tar archive's first entry (ustar: a 512-byte header, the size in octal at 124). */
export function firstTarEntry(tar: Buffer): Buffer | undefined {
  if (tar.length < 512) return undefined;
  const size = Number.parseInt(tar.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim(), 8);
  if (!Number.isFinite(size) || 512 + size > tar.length) return undefined;
  return tar.subarray(512, 512 + size);
}

/** A tar archive of one empty regular file, mode 0666, owned by root. */
export function emptyFileTar(name: string): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0, 100, 'utf8');
  header.write('0000666\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write('00000000000\0', 124);
  header.write('00000000000\0', 136);
  header.write('        ', 148);
  header.write('0', 156);
  header.write('ustar\0', 257);
  header.write('00', 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return Buffer.concat([header, Buffer.alloc(1024)]);
}

export async function pathExists(docker: Docker, container: string, path: string, signal?: AbortSignal) {
  return (await pathStat(docker, container, path, signal)) !== undefined;
}

/** The engine's stat of a path in a container (HEAD archive), undefined when it is not there. */
export async function pathStat(
  docker: Docker,
  container: string,
  path: string,
  signal?: AbortSignal,
): Promise<{ linkTarget?: string } | undefined> {
  try {
    const response = (await docker
      .getContainer(container)
      .infoArchive({ path, ...(signal ? { abortSignal: signal } : {}) })) as IncomingMessage;
    response.resume();
    const header = response.headers?.['x-docker-container-path-stat'];
    if (typeof header !== 'string') return {};
    const stat = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { linkTarget?: string };
    return stat.linkTarget ? { linkTarget: stat.linkTarget } : {};
  } catch (err) {
    if (isEngineNotFound(err)) return undefined;
    throw err;
  }
}
