import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { limitBytes } from '../log-lines.ts';
import { type ContainerLogOptions, ProviderNotFoundError } from '../provider.ts';
import type { EngineState } from './engine-state.ts';
import { LABELS } from './names.ts';

/**
 * A container's log from the engine, as the kubelet's /containerLogs serves
 * it. The engine is always asked for timestamps: they make `since` exact
 * (the engine takes whole seconds) and are cut off again when the caller did
 * not ask for them. Without a TTY the engine multiplexes stdout and stderr
 * in frames (an 8-byte header: stream, 3 zero bytes, big-endian length);
 * both go out in the order they were written.
 */
export async function containerLogs(
  deps: { docker: Docker; state: EngineState },
  pod: V1Pod,
  container: string,
  options: ContainerLogOptions,
  signal?: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const uid = pod.metadata?.uid ?? '';
  const observed = (await deps.state.pods({ [LABELS.uid]: uid }, signal)).get(uid);
  const plan = observed?.infra?.plan;
  const spec = [...(plan?.initContainers ?? []), ...(plan?.containers ?? [])].find(
    (c) => c.name === container,
  );
  const instances = (observed?.instances ?? [])
    .filter((i) => i.container === container)
    .sort((a, b) => b.attempt - a.attempt);
  const target = options.previous ? instances[1] : instances[0];
  if (!observed || !spec || !target) {
    const what = options.previous ? 'a previous instance of container' : 'container';
    throw new ProviderNotFoundError(
      `docker provider: pod ${pod.metadata?.namespace}/${pod.metadata?.name} (uid ${uid}) has no ${what} ${container}`,
    );
  }
  const follow = (options.follow ?? false) && !options.previous;
  const query = {
    stdout: true,
    stderr: true,
    timestamps: true,
    ...(options.tailLines !== undefined ? { tail: options.tailLines } : {}),
    ...(options.since ? { since: Math.floor(options.since.getTime() / 1000) } : {}),
    ...(signal ? { abortSignal: signal } : {}),
  };
  const engineContainer = deps.docker.getContainer(target.id);
  const source: Buffer | NodeJS.ReadableStream = follow
    ? await engineContainer.logs({ ...query, follow: true })
    : await engineContainer.logs({ ...query, follow: false });
  return limitBytes(lines(payloads(source, spec.tty), options), options.limitBytes);
}

/** The bytes the container wrote, without the engine's frame headers. */
async function* payloads(source: Buffer | NodeJS.ReadableStream, tty: boolean): AsyncGenerator<Buffer> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const piece of chunksOf(source)) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
    if (tty) {
      yield chunk;
      continue;
    }
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      yield pending.subarray(8, 8 + size);
      pending = pending.subarray(8 + size);
    }
  }
}

async function* chunksOf(source: Buffer | NodeJS.ReadableStream): AsyncGenerator<Buffer | string> {
  if (Buffer.isBuffer(source)) yield source;
  else yield* source;
}

/** Whole lines, filtered by `since`, with the engine's timestamp kept or cut. */
async function* lines(source: AsyncIterable<Buffer>, options: ContainerLogOptions): AsyncGenerator<Buffer> {
  let partial = '';
  const since = options.since?.getTime();
  const emit = (line: string): Buffer | undefined => {
    const space = line.indexOf(' ');
    const stamp = space > 0 ? line.slice(0, space) : '';
    const at = Date.parse(stamp);
    if (since !== undefined && Number.isFinite(at) && at < since) return undefined;
    if (!Number.isFinite(at)) return Buffer.from(`${line}\n`);
    const text = options.timestamps ? `${nanoStamp(stamp)}${line.slice(space)}` : line.slice(space + 1);
    return Buffer.from(`${text}\n`);
  };
  for await (const chunk of source) {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      const out = emit(line);
      if (out) yield out;
    }
  }
  if (partial) {
    const out = emit(partial);
    if (out) yield out;
  }
}

/**
 * An engine timestamp with nine fractional digits, as the kubelet writes
 * them: Docker gives nanoseconds, Podman whole seconds.
 */
export function nanoStamp(stamp: string): string {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(stamp);
  if (!m) return stamp;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0').slice(0, 9)}${m[3]}`;
}
