import { isProviderNotFound, type NodeProvider, type PodProvider } from '../provider/provider.ts';
import type { Metrics } from './emf.ts';

/**
 * Counts provider failures (ProviderErrors, by operation) around any
 * provider, so that no call site has to. "Not found" is an answer, not a
 * failure, and a call cut short by its invocation stopping is not the
 * provider's fault: neither is counted. Errors pass through unchanged.
 */
async function counted<T>(
  metrics: Metrics,
  operation: string,
  signal: AbortSignal | undefined,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!isProviderNotFound(err) && !signal?.aborted) metrics.providerError(operation);
    throw err;
  }
}

export function withNodeProviderMetrics(provider: NodeProvider, metrics: Metrics): NodeProvider {
  return {
    name: provider.name,
    ping: (node, signal) => counted(metrics, 'ping', signal, () => provider.ping(node, signal)),
    nodeStatus: (node, signal) =>
      counted(metrics, 'nodeStatus', signal, () => provider.nodeStatus(node, signal)),
  };
}

export function withPodProviderMetrics(provider: PodProvider, metrics: Metrics): PodProvider {
  const { containerLogs, podStats, watchChanges, streams } = provider;
  return {
    createPod: (pod, signal) => counted(metrics, 'createPod', signal, () => provider.createPod(pod, signal)),
    updatePod: (pod, signal) => counted(metrics, 'updatePod', signal, () => provider.updatePod(pod, signal)),
    deletePod: (pod, signal) => counted(metrics, 'deletePod', signal, () => provider.deletePod(pod, signal)),
    getPod: (ns, name, signal) => counted(metrics, 'getPod', signal, () => provider.getPod(ns, name, signal)),
    listPods: (node, signal) => counted(metrics, 'listPods', signal, () => provider.listPods(node, signal)),
    ...(containerLogs
      ? {
          containerLogs: (pod, container, options, signal) =>
            counted(metrics, 'containerLogs', signal, () =>
              containerLogs.call(provider, pod, container, options, signal),
            ),
        }
      : {}),
    ...(podStats
      ? {
          podStats: (node, signal) =>
            counted(metrics, 'podStats', signal, () => podStats.call(provider, node, signal)),
        }
      : {}),
    // A stream that breaks is reopened and logged by its caller; it is not a failed call.
    ...(watchChanges ? { watchChanges: (node, signal) => watchChanges.call(provider, node, signal) } : {}),
    // A session's failures are the client's to see (on its error stream), not a provider outage.
    ...(streams ? { streams } : {}),
  };
}
