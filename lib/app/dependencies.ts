import type { KubeConfig } from '@kubernetes/client-node';
import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import { awsCredentialSources, type ClusterCredentialSources } from '../kube/aws-credential-sources.ts';
import { createKubeClients, type KubeClients, KubeConfigError, loadKubeConfig } from '../kube/client.ts';
import { loadClusterKubeConfig, needsAwsSources } from '../kube/credentials.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { EmfMetrics, type Metrics, noMetrics } from '../metrics/emf.ts';
import { withNodeProviderMetrics, withPodProviderMetrics } from '../metrics/provider-metrics.ts';
import { MockNodeProvider } from '../provider/mock/mock-node.ts';
import { DynamoDbMockNodeStore } from '../provider/mock/mock-node-store.ts';
import { MockPodProvider } from '../provider/mock/mock-pods.ts';
import type { NodeProvider, PodProvider } from '../provider/provider.ts';
import { createDynamoDbClient, StateTable } from '../state/dynamodb.ts';

/** Everything a function builds once per cold start and reuses across invocations. */
export interface Dependencies {
  config: Config;
  clock: Clock;
  log: Logger;
  kube: KubeClients;
  table: StateTable;
  nodeProvider: NodeProvider;
  podProvider: PodProvider;
  metrics: Metrics;
}

/** What a caller may supply instead of the defaults (tests inject a clock, a logger, a kubeconfig). */
export interface DependencyOverrides {
  clock?: Clock;
  log?: Logger;
  functionName?: string;
  /** Cluster access already loaded (loadDependencies does this for secrets, parameters and EKS). */
  kubeConfig?: KubeConfig;
  metrics?: Metrics;
}

/** Kubelet version the virtual nodes report. */
export const KUBELET_VERSION = 'v1.20.2-svk';

/**
 * Builds the clients and the provider for `config`. Synchronous, so it only
 * reads a kubeconfig file: cluster access through Secrets Manager, SSM or EKS
 * needs {@link loadDependencies} (or `overrides.kubeConfig`).
 * @throws KubeConfigError on an unusable kubeconfig.
 */
export function buildDependencies(config: Config, overrides: DependencyOverrides = {}): Dependencies {
  const clock = overrides.clock ?? systemClock;
  const log =
    overrides.log ??
    createLogger({
      level: config.logLevel,
      base: overrides.functionName ? { fn: overrides.functionName } : {},
    });
  if (!overrides.kubeConfig && needsAwsSources(config.kube))
    throw new KubeConfigError('cluster access through AWS (secret, parameter or EKS) needs loadDependencies');
  const kube = createKubeClients(
    overrides.kubeConfig ??
      loadKubeConfig(
        config.kube.kubeconfigPath ? { kubeconfigPath: config.kube.kubeconfigPath } : { default: true },
      ),
    { requestTimeoutMs: config.kube.requestTimeoutMs },
  );
  const metrics =
    overrides.metrics ??
    (config.metrics.enabled
      ? new EmfMetrics({
          namespace: config.metrics.namespace,
          deployment: config.metrics.deployment,
          perNode: config.metrics.perNode,
        })
      : noMetrics);
  const { doc } = createDynamoDbClient({
    ...(config.dynamodb.endpoint ? { endpoint: config.dynamodb.endpoint } : {}),
    region: config.dynamodb.region,
  });
  const table = new StateTable(doc, config.dynamodb.tableName);
  const mockNodeProvider = new MockNodeProvider({
    store: new DynamoDbMockNodeStore(table),
    capacity: config.node.capacity,
    operatingSystem: config.node.operatingSystem,
    kubeletVersion: KUBELET_VERSION,
    clock,
  });
  const mockPodProvider = new MockPodProvider({
    table,
    clock,
    ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
  });
  const counting = metrics !== noMetrics;
  const nodeProvider = counting ? withNodeProviderMetrics(mockNodeProvider, metrics) : mockNodeProvider;
  const podProvider = counting ? withPodProviderMetrics(mockPodProvider, metrics) : mockPodProvider;
  return { config, clock, log, kube, table, nodeProvider, podProvider, metrics };
}

/**
 * What every handler calls once per cold start: {@link buildDependencies}
 * after loading cluster access, which may read a Secrets Manager secret or
 * SSM parameter, or describe an EKS cluster. A kubeconfig file loads exactly
 * as in buildDependencies.
 */
export async function loadDependencies(
  config: Config,
  overrides: DependencyOverrides & { sources?: ClusterCredentialSources } = {},
): Promise<Dependencies> {
  const { sources, ...rest } = overrides;
  if (rest.kubeConfig || !needsAwsSources(config.kube)) return buildDependencies(config, rest);
  const kubeConfig = await loadClusterKubeConfig(config.kube, {
    region: config.dynamodb.region,
    clock: rest.clock ?? systemClock,
    sources: sources ?? awsCredentialSources({ region: config.dynamodb.region }),
  });
  return buildDependencies(config, { ...rest, kubeConfig });
}
