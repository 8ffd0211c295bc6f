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
  return readEngineLog(deps.docker, target.id, spec.tty, { ...options, follow }, signal);
}

/**
 * One container's log from the engine, rendered as the kubelet serves it and
 * cut at `limitBytes`. Always a stream, follow or not: dockerode's
 * `container.logs` reads a non-follow log whole into memory before handing
 * it over, which for a long log is the function's memory and the client's
 * wait; read as a stream, the client gets its first lines at once, and once
 * `limitBytes` went through (the engine has no byte limit of its own) the
 * engine's connection is closed instead of read to its end.
 */
export async function readEngineLog(
  docker: Docker,
  containerId: string,
  tty: boolean,
  options: ContainerLogOptions,
  signal?: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const query = {
    stdout: true,
    stderr: true,
    timestamps: true,
    follow: options.follow ?? false,
    ...(options.tailLines !== undefined ? { tail: options.tailLines } : {}),
    ...(options.since ? { since: engineSince(options.since) } : {}),
  };
  const source = await engineLogStream(docker, containerId, query, signal);
  const render = { sinceMs: options.since?.getTime(), timestamps: options.timestamps ?? false };
  return limitBytes(rendered(engineLogLines(chunksOf(source), tty), render), options.limitBytes);
}

/** `GET /containers/{id}/logs` as a byte stream, as dockerode's `logs` asks for it (same status codes and errors). */
function engineLogStream(
  docker: Docker,
  containerId: string,
  query: Record<string, unknown>,
  signal: AbortSignal | undefined,
): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      {
        path: `/containers/${encodeURIComponent(containerId)}/logs?`,
        method: 'GET',
        isStream: true,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        options: query,
        ...(signal ? { abortSignal: signal } : {}),
      },
      (err, data) => (err ? reject(err) : resolve(data as NodeJS.ReadableStream)),
    );
  });
}

async function* chunksOf(source: NodeJS.ReadableStream): AsyncGenerator<Buffer> {
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
