/** What bench/kube-client/workload.ts asks of a Kubernetes client; each adapter builds one. */
import type { V1Pod } from '@kubernetes/client-node';

export interface BenchClient {
  readLease(namespace: string, name: string): Promise<unknown>;
  /** A strategic merge patch of the node's status. */
  patchNodeStatus(name: string, body: object): Promise<unknown>;
  readNode(name: string): Promise<unknown>;
  /** The pods bound to `node`, as the node's pod-status round lists them. */
  listPods(node: string): Promise<unknown>;
  readPod(namespace: string, name: string): Promise<V1Pod>;
  /** PUTs `pod`'s status with `message` set. */
  replacePodStatus(namespace: string, name: string, pod: V1Pod, message: string): Promise<unknown>;
}
