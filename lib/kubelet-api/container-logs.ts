import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../kube/client.ts';
import type { CoreApi } from '../kube/core-api.ts';
import { limitBytes } from '../provider/log-lines.ts';
import { isProviderNotFound, type PodProvider } from '../provider/provider.ts';
import { isLogQueryError, parseLogQuery } from './log-options.ts';
import { type KubeletApiResponse, textResponse } from './responses.ts';

export interface ContainerLogsContext {
  core: CoreApi;
  podProvider: PodProvider;
  /** The node asked (from the Host header). */
  node: string;
  now: number;
  /** A follow ends this long after it started: the bound of one streamed answer. */
  followMaxMs: number;
  /** Aborts when the client goes away or the invocation ends. */
  signal: AbortSignal;
}

/**
 * `GET /containerLogs/{namespace}/{pod}/{container}`: the checks the kubelet
 * makes (the pod is one of this node's, has the container, and the container
 * has started or, for `previous`, terminated before), then the provider's
 * log stream. A follow is bounded by `followMaxMs`.
 */
export async function containerLogs(
  segments: readonly string[],
  query: Readonly<Record<string, readonly string[]>>,
  ctx: ContainerLogsContext,
): Promise<KubeletApiResponse> {
  const [namespace, name, container] = segments;
  if (!namespace) return textResponse(400, 'Missing podNamespace.');
  if (!name) return textResponse(400, 'Missing podID.');
  if (!container || segments.length > 3) return textResponse(400, 'Missing container name.');
  let options: ReturnType<typeof parseLogQuery>;
  try {
    options = parseLogQuery(query, ctx.now);
  } catch (err) {
    if (isLogQueryError(err)) return textResponse(400, `invalid log options: ${err.message}`);
    throw err;
  }
  const pod = await readPod(ctx.core, namespace, name);
  if (!pod || pod.spec?.nodeName !== ctx.node) {
    return textResponse(404, `pod "${name}" does not exist on node "${ctx.node}"`);
  }
  if (!hasContainer(pod, container))
    return textResponse(404, `container "${container}" not found in pod "${name}"`);
  const notReady = logsUnavailable(pod, container, options.previous === true);
  if (notReady) return textResponse(400, notReady);
  if (!ctx.podProvider.containerLogs) {
    return textResponse(501, 'the provider of this node does not serve container logs');
  }
  const signal = options.follow
    ? AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.followMaxMs)])
    : ctx.signal;
  let stream: AsyncIterable<Uint8Array>;
  try {
    stream = await ctx.podProvider.containerLogs(pod, container, options, signal);
  } catch (err) {
    if (!isProviderNotFound(err)) throw err;
    // The kubelet answers a missing previous instance with 400, a missing pod or container with 404.
    return textResponse(options.previous ? 400 : 404, err.message);
  }
  return {
    statusCode: 200,
    headers: { 'content-type': 'text/plain' },
    body: limitBytes(endOnAbort(stream, signal), options.limitBytes),
  };
}

async function readPod(core: CoreApi, namespace: string, name: string): Promise<V1Pod | undefined> {
  try {
    return await core.readNamespacedPod({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function hasContainer(pod: V1Pod, name: string): boolean {
  const spec = pod.spec;
  return [
    ...(spec?.containers ?? []),
    ...(spec?.initContainers ?? []),
    ...(spec?.ephemeralContainers ?? []),
  ].some((c) => c.name === name);
}

/**
 * Why the container has no log to read yet, in the kubelet's words (its
 * validateContainerLogStatus), or undefined when it has one.
 */
function logsUnavailable(pod: V1Pod, container: string, previous: boolean): string | undefined {
  const name = pod.metadata?.name ?? '';
  const statuses: V1ContainerStatus[] = [
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.ephemeralContainerStatuses ?? []),
  ];
  const status = statuses.find((s) => s.name === container);
  if (!status) return `container "${container}" in pod "${name}" is not available`;
  const last = status.lastState?.terminated;
  if (previous) {
    return last ? undefined : `previous terminated container "${container}" in pod "${name}" not found`;
  }
  if (status.state?.running || status.state?.terminated || last) return undefined;
  const reason = status.state?.waiting?.reason;
  return `container "${container}" in pod "${name}" is waiting to start: ${reason ?? 'ContainerCreating'}`;
}

/** Stops reading `source` once `signal` aborts, even when the source itself would wait on. */
async function* endOnAbort(
  source: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) resolve('aborted');
    signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next === 'aborted' || next.done) return;
      yield next.value;
    }
  } finally {
    // Tell the source to stop (a follow closes its backend stream); do not wait for it.
    void iterator.return?.()?.catch(() => undefined);
  }
}
