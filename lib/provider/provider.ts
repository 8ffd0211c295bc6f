/**
 * The provider boundary: what a backend (the mock today, Fargate or an HTTP
 * plugin later) implements so that virtual nodes and their pods run on it.
 * The pod part of the contract is added by the pod pipeline.
 */

/** A node condition as the provider sees it; the node controller adds the timestamps. */
export interface ProviderNodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** What the provider reports about one virtual node. Returned objects must not be mutated. */
export interface ProviderNodeStatus {
  capacity: Readonly<Record<string, string>>;
  /** Defaults to capacity. */
  allocatable?: Readonly<Record<string, string>>;
  /**
   * Ready and the pressure conditions. Conditions the provider stops reporting
   * are removed from the Node; conditions written by other actors are kept.
   */
  conditions: readonly ProviderNodeCondition[];
  /** Free-form versions shown in `kubectl get nodes -o wide`. */
  nodeInfo: { kubeletVersion: string; operatingSystem: string; architecture: string; osImage: string };
}

/** The node part of a provider. */
export interface NodeProvider {
  /** The provider's name, used in the default taint `virtual-kubelet.io/provider=<name>:NoSchedule`. */
  readonly name: string;
  /**
   * Checks that the backend can run pods for `nodeName`. Rejects (with a
   * message saying why) when it cannot; the node then turns Ready=False with
   * reason ProviderPingFailed. Called every ping interval; must be cheap.
   */
  ping(nodeName: string, signal?: AbortSignal): Promise<void>;
  /** The node's capacity, conditions and info. Called every ping interval; a change is written at once. */
  nodeStatus(nodeName: string, signal?: AbortSignal): Promise<ProviderNodeStatus>;
}
