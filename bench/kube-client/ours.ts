/** bench/kube-client.ts's adapter for our HTTP layer (lib/kube: keep-alive agents, retries, client-node's KubeConfig for auth). */
import { createKubeClients, loadKubeConfig } from '../../lib/kube/client.ts';
import { PatchStrategy, setHeaderOptions } from '../../lib/kube/patch.ts';
import type { BenchClient } from './adapter.ts';

export async function open(kubeconfigPath: string): Promise<BenchClient> {
  const { core, coordination } = createKubeClients(await loadKubeConfig({ kubeconfigPath }));
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
