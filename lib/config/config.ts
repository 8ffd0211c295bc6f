import type { ProviderConfig } from '../provider/registry.ts';
import type { HostPort } from '../util/host-port.ts';
import type { ConfigIssue } from './env-parsing.ts';
import type { TickPartName } from './env-variables.ts';
import type { KubeletApiSettings } from './kubelet-api-config.ts';
import type { NodeSettings } from './node-settings.ts';

/**
 * What a valid configuration is ({@link Config}) and how an invalid one is
 * reported ({@link ConfigError}). It is read from the environment once, at
 * cold start, by loadConfig (lib/config/load-config.ts).
 */

/** The whole configuration, parsed and validated once at cold start. */
export interface Config {
  /** The provider the nodes run their pods on, with its own settings (lib/provider/registry.ts). */
  provider: ProviderConfig;
  nodeNames: string[];
  node: NodeSettings;
  heartbeat: {
    /** Nodes renewed at once by one invocation. */
    maxParallel: number;
    /** The loop stops this long before the invocation's deadline to hand over cleanly. */
    stopBeforeDeadlineMs: number;
  };
  lock: {
    /** A lock whose record does not change for this long is taken over. */
    ttlMs: number;
    /** How often a waiting contender re-reads the lock record. */
    pollMs: number;
  };
  pods: {
    /**
     * How long a pod-sync invocation's claim on a pod (taken before it calls
     * the provider) keeps others waiting; after it, a crashed claimant is
     * taken over. Must exceed the slowest provider create/update.
     */
    claimMs: number;
    /**
     * How long pod-status and the reconciler leave the force delete of a pod
     * whose terminated status pod-status wrote to the pod-sync invocation
     * that status's event wakes: longer than that event may wait in
     * pod-sync's queue; after it (the event lost) they force-delete it.
     */
    forceDeleteHandOffMs: number;
    /** pod-status polls the provider and writes changed statuses this often. */
    statusIntervalMs: number;
    /** pod-status looks for dangling provider pods when it takes over, then this often. */
    danglingIntervalMs: number;
    /** Status writes, force deletes and dangling deletes in flight at once. */
    maxParallel: number;
    /** The pod-status loop stops this long before the invocation's deadline to hand over cleanly. */
    statusStopBeforeDeadlineMs: number;
    /**
     * The API server address pods are given (KUBERNETES_SERVICE_HOST/PORT, lib/pod/env/api-server-address.ts);
     * absent: the kubeconfig's API server unless on loopback.
     */
    apiServer?: HostPort;
  };
  /** The assigned node config (lib/node-config/): a ConfigMap shared by all nodes of the deployment. */
  nodeConfig: {
    /** The ConfigMap; dynamic configuration is off (local config only) when undefined. */
    source?: { namespace: string; name: string };
    /** How long an assigned config runs before it becomes the last-known-good. */
    trialMs: number;
  };
  dynamodb: { tableName: string; endpoint?: string; region: string };
  events: {
    /** Name or ARN of the EventBridge bus pod events are published to. */
    busName: string;
    /** URL of pod-sync's SQS dead-letter queue, read by the status command; absent locally. */
    deadLetterQueueUrl?: string;
  };
  podWatch: {
    /** Nodes watched at once by one invocation; the others wait for a free slot or another invocation. */
    maxParallel: number;
    /** The watcher stops this long before the invocation's deadline to publish, save its bookmark and hand over. */
    stopBeforeDeadlineMs: number;
    /** Longest single watch request; the API server sends a bookmark 2 s before it ends. */
    watchTimeoutSeconds: number;
    /** How long a received event may wait for others to fill a batch of 10. */
    flushMs: number;
    /** Minimum time between two bookmark writes of one node (always written at the end). */
    bookmarkIntervalMs: number;
  };
  /** The tick function (lib/tick/): short invocations chained through a FIFO queue. */
  tick: {
    /** The chain's SQS FIFO queue; absent locally, where the in-process queue is given instead. */
    queueUrl?: string;
    /** What each tick does. */
    parts: TickPartName[];
    /** A tick stops its work this long after it started (at the latest shortly before its deadline). */
    workMs: number;
  };
  /** Cluster access: at most one of a kubeconfig file, secret, parameter or EKS cluster (lib/kube/credentials.ts). */
  kube: {
    kubeconfigPath?: string;
    /** Secrets Manager secret (name or ARN) whose SecretString is the kubeconfig. */
    kubeconfigSecret?: string;
    /** SSM parameter (name or ARN), typically a SecureString, whose value is the kubeconfig. */
    kubeconfigParameter?: string;
    /** EKS IAM authentication; endpoint and CA from eks:DescribeCluster when not given. */
    eks?: { clusterName: string; endpoint?: string; caData?: string };
    requestTimeoutMs: number;
  };
  /** CloudWatch Embedded Metric Format lines on stdout (lib/metrics/emf.ts). */
  metrics: {
    enabled: boolean;
    namespace: string;
    /** Value of the Deployment dimension. */
    deployment: string;
    /** Value of every metric's `service` dimension and every log line's `service` field. */
    service: string;
    /** LeaseRenewalLag also per node (one custom metric per node). */
    perNode: boolean;
  };
  /** The kubelet API function (lib/kubelet-api/): `kubectl logs`, `/stats/summary`, `/metrics/resource`. */
  kubeletApi: KubeletApiSettings;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The release of this code (`major.minor.patch`), used by the reconciler's gating. */
  release: string;
  /** Rolling-upgrade gating: see docs/reconciler.md. */
  gating: {
    /** The reconciler of this release raises the status's minimum compatible release to this. */
    minCompatibleRelease: string;
    /** Functions of this release act only on state reconciled by at least this release. */
    requiredReconcilerRelease: string;
    /** One record of a running release counts this long; longer than the longest invocation. */
    releaseRecordTtlMs: number;
    /** A reconciler status that lets this release act is reused this long per cold start (0: never). */
    statusCacheMs: number;
  };
  reconcile: {
    /** The leader runs reconcileAll this often after the first success. */
    intervalMs: number;
    /** A new leader waits this long when a status exists (the previous leader's requests in flight). */
    leaderWaitMs: number;
    /** The leader stops this long before the invocation's deadline, handing over. */
    stopBeforeDeadlineMs: number;
    /** Pods created or deleted less than this long ago are left to their events. */
    resyncGraceMs: number;
  };
}

/** Invalid configuration. The message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly issues: ConfigIssue[]) {
    super(`invalid configuration: ${issues.map((i) => `${i.variable} ${i.message}`).join('; ')}`);
  }
}
