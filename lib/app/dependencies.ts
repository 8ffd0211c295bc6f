import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import { createKubeClients, type KubeClients, loadKubeConfig } from '../kube/client.ts';
import { createLogger, type Logger } from '../log/logger.ts';
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
  provider: NodeProvider;
  pods: PodProvider;
}

/** Kubelet version the virtual nodes report. */
export const KUBELET_VERSION = 'v1.20.2-svk';

/** Builds the clients and the provider for `config`. Throws on an unusable kubeconfig. */
export function buildDependencies(
  config: Config,
  overrides: { clock?: Clock; log?: Logger; functionName?: string } = {},
): Dependencies {
  const clock = overrides.clock ?? systemClock;
  const log =
    overrides.log ??
    createLogger({
      level: config.logLevel,
      base: overrides.functionName ? { fn: overrides.functionName } : {},
    });
  const kube = createKubeClients(
    loadKubeConfig(
      config.kube.kubeconfigPath ? { kubeconfigPath: config.kube.kubeconfigPath } : { default: true },
    ),
    { requestTimeoutMs: config.kube.requestTimeoutMs },
  );
  const { doc } = createDynamoDbClient({
    ...(config.dynamodb.endpoint ? { endpoint: config.dynamodb.endpoint } : {}),
    region: config.dynamodb.region,
  });
  const table = new StateTable(doc, config.dynamodb.tableName);
  const provider = new MockNodeProvider({
    store: new DynamoDbMockNodeStore(table),
    capacity: config.node.capacity,
    operatingSystem: config.node.operatingSystem,
    kubeletVersion: KUBELET_VERSION,
    clock,
  });
  const pods = new MockPodProvider({
    table,
    clock,
    ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
  });
  return { config, clock, log, kube, table, provider, pods };
}
