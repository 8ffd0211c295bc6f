import type { V1Pod } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { limitBytes } from '../log-lines.ts';
import { type ContainerLogOptions, ProviderNotFoundError } from '../provider.ts';
import { type EngineLogLine, engineLogLines, engineSince, renderLogLine } from './engine-log.ts';
import type { EngineState } from './engine-state.ts';
import { LABELS } from './names.ts';

/**
 * A container's log from the engine, as the kubelet's /containerLogs serves
 * it (see engine-log.ts for how the engine's entries become lines). The
 * engine is always asked for timestamps: they check `since` again on our
 * side and are cut off when the caller did not ask for them.
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
    ...(options.since ? { since: engineSince(options.since) } : {}),
    ...(signal ? { abortSignal: signal } : {}),
  };
  const engineContainer = deps.docker.getContainer(target.id);
  const source: Buffer | NodeJS.ReadableStream = follow
    ? await engineContainer.logs({ ...query, follow: true })
    : await engineContainer.logs({ ...query, follow: false });
  const render = { sinceMs: options.since?.getTime(), timestamps: options.timestamps ?? false };
  return limitBytes(rendered(engineLogLines(chunksOf(source), spec.tty), render), options.limitBytes);
}

async function* chunksOf(source: Buffer | NodeJS.ReadableStream): AsyncGenerator<Buffer> {
  if (Buffer.isBuffer(source)) {
    yield source;
    return;
  }
  for await (const piece of source) yield typeof piece === 'string' ? Buffer.from(piece) : piece;
}

async function* rendered(
  lines: AsyncIterable<EngineLogLine>,
  options: Parameters<typeof renderLogLine>[1],
): AsyncGenerator<Uint8Array> {
  for await (const line of lines) {
    const out = renderLogLine(line, options);
    if (out) yield out;
  }
}
