import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import { awsCredentialSources, type ClusterCredentialSources } from '../kube/aws-credential-sources.ts';
import { createKubeClients, type KubeClients, loadKubeConfig } from '../kube/client.ts';
import { loadClusterKubeConfig, needsAwsSources } from '../kube/credentials.ts';
import type { KubeContext } from '../kube/kube-context.ts';
import { DynamoDbLockStore } from '../lock/dynamodb-lock-store.ts';
import type { LockFence, LockStore } from '../lock/lock.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { EmfMetrics, type Metrics, noMetrics } from '../metrics/emf.ts';
import { withNodeProviderMetrics, withPodProviderMetrics } from '../metrics/provider-metrics.ts';
import { KubePodEventRecorder } from '../pod/sync/pod-events.ts';
import type { NodeProvider, PodProvider } from '../provider/provider.ts';
import type { Providers } from '../provider/provider-factory.ts';
import { createProviders } from '../provider/registry.ts';
import { StateTable } from '../state/dynamodb.ts';
import { createDynamoDbClient } from '../state/dynamodb-clients.ts';

/**
 * The composition root: the one place that turns a {@link Config} into the
 * ports the functions use. Every port can be supplied instead (tests, `npm
 * start`, a handler that shares a client); whatever is not supplied is built
 * from the config. What the ports are composed into lives beside it: a
 * node's controller and lease in heartbeat.ts, a pod reconciler in
 * pod-sync.ts.
 */

/**
 * What every function builds once per cold start and reuses across
 * invocations, the provider aside: what a function that never calls the
 * provider (pod-watch) is given, so that it never builds one (the Docker
 * provider's factory reads the engine's TLS secret, which pod-watch's role
 * may not read: docs/security.md).
 */
export interface BaseDependencies {
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
  metrics: Metrics;
}

/** The base and the provider's two halves: what the functions that call the provider are given. */
export interface Dependencies extends BaseDependencies {
  nodeProvider: NodeProvider;
  podProvider: PodProvider;
}

/** Ports supplied instead of being built from the config, the provider aside. */
export interface BaseDependencyOverrides {
  clock?: Clock;
  log?: Logger;
  /** Added to every log line of the default logger as `function_name`. */
  functionName?: string;
  /** Cluster access already loaded; without it, the config's kubeconfig file, secret, parameter or EKS cluster. */
  kubeContext?: KubeContext;
  /** Kubernetes clients already built (then `kubeContext` is not used). */
  kube?: KubeClients;
  /** Where a secret, a parameter or an EKS cluster is read from (tests replace the AWS clients). */
  sources?: ClusterCredentialSources;
  table?: StateTable;
  lockStore?: LockStore & LockFence;
  metrics?: Metrics;
}

/** Ports supplied instead of being built from the config. */
export interface DependencyOverrides extends BaseDependencyOverrides {
  /** The providers, instead of the one `config.provider` names (still counted by the metrics). */
  providers?: Providers;
}

/** Kubelet version the virtual nodes report. */
export const KUBELET_VERSION = 'v1.20.2-svk';

function createMetrics(config: Config['metrics']): Metrics {
  return config.enabled
    ? new EmfMetrics({
        namespace: config.namespace,
        deployment: config.deployment,
        service: config.service,
        perNode: config.perNode,
      })
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
 * What pod-watch's handler calls once per cold start: builds every port but
 * the provider from `config` unless `overrides` supplies it. Cluster access
 * may read a Secrets Manager secret or an SSM parameter, or describe an EKS
 * cluster; no provider module is loaded and no provider secret is read.
 * @throws KubeConfigError on unusable cluster access.
 */
export async function loadBaseDependencies(
  config: Config,
  overrides: BaseDependencyOverrides = {},
): Promise<BaseDependencies> {
  const clock = overrides.clock ?? systemClock;
  const log =
    overrides.log ??
    createLogger({
      level: config.logLevel,
      // Powertools' names (lib/log/lambda-fields.ts); the invocation's own fields come with invocationLog.
      // `service` is the metrics' `service` dimension, so logs and metrics are found by one name.
      base: {
        service: config.metrics.service,
        ...(overrides.functionName ? { function_name: overrides.functionName } : {}),
      },
    });
  const kube =
    overrides.kube ??
    createKubeClients(overrides.kubeContext ?? (await loadClusterAccess(config, clock, overrides.sources)), {
      requestTimeoutMs: config.kube.requestTimeoutMs,
    });
  const table =
    overrides.table ??
    new StateTable(
      createDynamoDbClient({
        ...(config.dynamodb.endpoint ? { endpoint: config.dynamodb.endpoint } : {}),
        region: config.dynamodb.region,
      }).doc,
      config.dynamodb.tableName,
    );
  const lockStore = overrides.lockStore ?? new DynamoDbLockStore(table);
  const metrics = overrides.metrics ?? createMetrics(config.metrics);
  return { config, clock, log, kube, table, lockStore, metrics };
}

/**
 * What every other handler calls once per cold start: the base
 * ({@link loadBaseDependencies}) and the provider's two halves. The
 * provider's module is loaded here (a dynamic import) and builds its
 * providers, reading any secret its settings name (the Docker engine's TLS
 * material), which are wrapped to count their failures when metrics are on.
 * @throws KubeConfigError on unusable cluster access; a provider factory's
 * rejection passes through.
 */
export async function loadDependencies(
  config: Config,
  overrides: DependencyOverrides = {},
): Promise<Dependencies> {
  const base = await loadBaseDependencies(config, overrides);
  const { clock, log, kube, table, metrics } = base;
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
      events: new KubePodEventRecorder({ core: kube.core, clock, log }),
    }));
  const counting = metrics !== noMetrics;
  return {
    ...base,
    nodeProvider: counting
      ? withNodeProviderMetrics(providers.nodeProvider, metrics)
      : providers.nodeProvider,
    podProvider: counting ? withPodProviderMetrics(providers.podProvider, metrics) : providers.podProvider,
  };
}
