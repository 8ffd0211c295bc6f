import type { V1Pod } from '@kubernetes/client-node';
import type { ToolingClients } from '../../lib/kube/tooling-clients.ts';

/**
 * Nodes and pods that nothing runs, for the tests of what watches them
 * (pod-watch at both cadences, event refusal): a Node object with no
 * kubelet behind it, and pods bound to it that stay put and untouched.
 */

/** A Node object nothing runs: pods bound to it stay put (no orphan-pod GC) and untouched. */
export async function createIdleNode(kube: ToolingClients, name: string): Promise<void> {
  await kube.core.createNode({ body: { metadata: { name } } });
}

/**
 * A pod bound to `node` that nothing can run. It tolerates everything: the
 * idle node goes NotReady/unreachable, and the taint manager must not evict.
 */
export function createIdlePod(
  kube: ToolingClients,
  namespace: string,
  node: string,
  name: string,
): Promise<V1Pod> {
  return kube.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        tolerations: [{ operator: 'Exists' }],
        containers: [{ name: 'c', image: 'registry.invalid/none:1' }],
      },
    },
  });
}

/** A cluster's current resourceVersion: what a list without resourceVersion returns. */
export async function clusterResourceVersion(kube: ToolingClients): Promise<bigint> {
  const list = await kube.core.listNamespacedConfigMap({ namespace: 'kube-system', limit: 1 });
  return BigInt(list.metadata?.resourceVersion ?? '0');
}
