import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { awsCredentialSources, type ClusterCredentialSources } from '../kube/aws-credential-sources.ts';
import { createKubeClients, type KubeClients, loadKubeConfig } from '../kube/client.ts';
import { loadClusterKubeConfig, needsAwsSources } from '../kube/credentials.ts';
import type { KubeContext } from '../kube/kube-context.ts';
import { DynamoDbLockStore } from '../lock/dynamodb-lock-store.ts';
import type { LockFence, LockStore } from '../lock/lock.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { EmfMetrics, type Metrics, noMetrics } from '../metrics/emf.ts';
import { withNodeProviderMetrics, withPodProviderMetrics } from '../metrics/provider-metrics.ts';
import { NodeController } from '../node/node-controller.ts';
import { NodeLease } from '../node/node-lease.ts';
import { kubeEnvSources } from '../pod/env/env-sources.ts';
import { KnownPodStore } from '../pod/known/known-pods.ts';
import { PodApplier, type PodApplierOptions } from '../pod/sync/pod-applier.ts';
import { PodDeleter, type PodDeleterOptions } from '../pod/sync/pod-deleter.ts';
import { KubePodEventRecorder } from '../pod/sync/pod-events.ts';
import { PodReconciler, type PodReconcilerOptions } from '../pod/sync/pod-reconciler.ts';
import type { NodeProvider, PodProvider } from '../provider/provider.ts';
import type { Providers } from '../provider/provider-factory.ts';
import { createProviders } from '../provider/registry.ts';
import { StateTable } from '../state/dynamodb.ts';
import { createDynamoDbWire } from '../state/dynamodb-wire.ts';

/**
 * The composition root: the one place that turns a {@link Config} into the
 * ports the functions use, and those ports into the parts every cadence
 * drives alike (a node's controller and lease, a pod reconciler). Every port can be supplied instead (tests, `npm
 * start`, a handler that shares a client); whatever is not supplied is built
 * from the config.
 */

/** Everything a function builds once per cold start and reuses across invocations. */
export interface Dependencies {
  config: Config;
  clock: Clock;
  log: Logger;
  kube: KubeClients;
  table: StateTable;
  /**
   * Where the locks (heartbeat, pod-status, reconcile, pod-watch per node)
   * are kept, and their fence: leader-only writes go through it.
   */
  lockStore: LockStore & LockFence;
  nodeProvider: NodeProvider;
  podProvider: PodProvider;
  metrics: Metrics;
}

/** Ports supplied instead of being built from the config. */
export interface DependencyOverrides {
  clock?: Clock;
  log?: Logger;
  /** Added to every log line of the default logger as `fn`. */
  functionName?: string;
  /** Cluster access already loaded; without it, the config's kubeconfig file, secret, parameter or EKS cluster. */
  kubeContext?: KubeContext;
  /** Kubernetes clients already built (then `kubeContext` is not used). */
  kube?: KubeClients;
  /** Where a secret, a parameter or an EKS cluster is read from (tests replace the AWS clients). */
  sources?: ClusterCredentialSources;
  table?: StateTable;
  lockStore?: LockStore & LockFence;
  /** The providers, instead of the one `config.provider` names (still counted by the metrics). */
  providers?: Providers;
  metrics?: Metrics;
}

/** Kubelet version the virtual nodes report. */
export const KUBELET_VERSION = 'v1.20.2-svk';

function createMetrics(config: Config['metrics']): Metrics {
  return config.enabled
    ? new EmfMetrics({ namespace: config.namespace, deployment: config.deployment, perNode: config.perNode })
    : noMetrics;
}

async function loadClusterAccess(config: Config, clock: Clock, sources?: ClusterCredentialSources) {
  const { kube, dynamodb } = config;
  if (needsAwsSources(kube)) {
    return loadClusterKubeConfig(kube, {
      region: dynamodb.region,
      clock,
      sources: sources ?? awsCredentialSources({ region: dynamodb.region }),
    });
  }
  return loadKubeConfig(kube.kubeconfigPath ? { kubeconfigPath: kube.kubeconfigPath } : { default: true });
}

/**
 * What every handler calls once per cold start: builds every port from
 * `config` unless `overrides` supplies it. Cluster access may read a Secrets
 * Manager secret or an SSM parameter, or describe an EKS cluster; the
 * provider's module is loaded here (a dynamic import) and builds its
 * providers, which are wrapped to count their failures when metrics are on.
 * @throws KubeConfigError on unusable cluster access; a provider factory's
 * rejection passes through.
 */
export async function loadDependencies(
  config: Config,
  overrides: DependencyOverrides = {},
): Promise<Dependencies> {
  const clock = overrides.clock ?? systemClock;
  const log =
    overrides.log ??
    createLogger({
      level: config.logLevel,
      base: overrides.functionName ? { fn: overrides.functionName } : {},
    });
  const kube =
    overrides.kube ??
    createKubeClients(overrides.kubeContext ?? (await loadClusterAccess(config, clock, overrides.sources)), {
      requestTimeoutMs: config.kube.requestTimeoutMs,
    });
  const table =
    overrides.table ??
    new StateTable(
      createDynamoDbWire({
        ...(config.dynamodb.endpoint ? { endpoint: config.dynamodb.endpoint } : {}),
        region: config.dynamodb.region,
        ...(config.aws.credentials ? { credentials: config.aws.credentials } : {}),
        sdkEndpointRules: config.aws.sdkEndpointRules,
      }),
      config.dynamodb.tableName,
    );
  const lockStore = overrides.lockStore ?? new DynamoDbLockStore(table);
  const metrics = overrides.metrics ?? createMetrics(config.metrics);
  const providers =
    overrides.providers ??
    (await createProviders(config.provider, {
      config,
      table,
      clock,
      log,
      region: config.dynamodb.region,
      kubeletVersion: KUBELET_VERSION,
      kube,
    }));
  const counting = metrics !== noMetrics;
  return {
    config,
    clock,
    log,
    kube,
    table,
    lockStore,
    nodeProvider: counting
      ? withNodeProviderMetrics(providers.nodeProvider, metrics)
      : providers.nodeProvider,
    podProvider: counting ? withPodProviderMetrics(providers.podProvider, metrics) : providers.podProvider,
    metrics,
  };
}

export interface NodeControllerSpec {
  name: string;
  /** The node's settings; its Lease's duration is `settings.leaseDurationSeconds`. */
  settings: NodeSettings;
  /** The invocation's logger; the node's lines add `node`. */
  log: Logger;
}

/**
 * One virtual node's controller and the Lease it renews, wired together the
 * same way wherever a node is driven (the heartbeat, the reconciler's
 * registration): on clients of their own, so that the node's request count
 * is theirs alone, and with a lease that registers the Node again before it
 * recreates itself (the garbage collector deletes the Lease with its Node).
 */
export function buildNodeController(
  deps: Pick<Dependencies, 'kube' | 'nodeProvider' | 'clock'>,
  spec: NodeControllerSpec,
): NodeController {
  const kube = deps.kube.withOwnCount();
  const log = spec.log.child({ node: spec.name });
  let controller: NodeController | undefined;
  const lease = new NodeLease({
    kube,
    nodeName: spec.name,
    durationSeconds: spec.settings.leaseDurationSeconds,
    clock: deps.clock,
    log,
    beforeRecreate: () => controller?.ensureRegistered() ?? Promise.resolve(),
  });
  controller = new NodeController({
    name: spec.name,
    settings: spec.settings,
    provider: deps.nodeProvider,
    kube,
    lease,
    clock: deps.clock,
    log,
  });
  return controller;
}

/** What a pod reconciler and its two step executors need, shared by all three. */
export type PodReconcilerParts = PodApplierOptions &
  PodDeleterOptions &
  Pick<PodReconcilerOptions, 'log' | 'waitUntil'>;

/**
 * A pod reconciler with its step executors: PodApplier (createPod/updatePod
 * under a claim) and PodDeleter (the deleting steps).
 */
export function buildPodReconciler(parts: PodReconcilerParts): PodReconciler {
  return new PodReconciler({ ...parts, applier: new PodApplier(parts), deleter: new PodDeleter(parts) });
}

/**
 * The reconciler pod-sync runs, built from a cold start's dependencies: the
 * one code path for reconciling a pod key, used by pod-sync for each event
 * and by the cluster reconciler for pods whose events were lost.
 */
export function createPodReconciler(
  deps: Dependencies,
  options: Pick<PodReconcilerParts, 'log' | 'owner' | 'waitUntil' | 'signal'> & {
    /** Defaults to the configured nodes. */
    nodes?: readonly string[];
  },
): PodReconciler {
  const { config, clock, kube, table, podProvider } = deps;
  return buildPodReconciler({
    core: kube.core,
    provider: podProvider,
    knownPods: new KnownPodStore(table),
    events: new KubePodEventRecorder({ core: kube.core, clock, log: options.log }),
    envSources: kubeEnvSources(kube.core),
    nodes: options.nodes ?? config.nodeNames,
    clock,
    log: options.log,
    owner: options.owner,
    claimMs: config.pods.claimMs,
    waitUntil: options.waitUntil,
    env: {
      ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
      allocatable: config.node.capacity,
    },
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
