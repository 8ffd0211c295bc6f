/**
 * bench/kube-client.ts's adapter for client-node's typed APIs. The same
 * source is built against client-node 1.4 (this project's) and 2.x (the
 * bench's own install): the import below is resolved per build.
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { BenchClient } from './adapter.ts';

export async function open(kubeconfigPath: string): Promise<BenchClient> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
  return {
    readLease: (namespace, name) => coordination.readNamespacedLease({ namespace, name }),
    patchNodeStatus: (name, body) => core.patchNodeStatus({ name, body }, strategic),
    readNode: (name) => core.readNode({ name }),
    listPods: (node) => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
    readPod: (namespace, name) => core.readNamespacedPod({ namespace, name }),
    replacePodStatus: (namespace, name, pod, message) =>
      core.replaceNamespacedPodStatus({
        namespace,
        name,
        body: { ...pod, status: { ...pod.status, message } },
      }),
  };
}
