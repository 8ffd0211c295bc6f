import type { Clock } from '../clock.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import type { KubeClients } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';
import type { StateTable } from '../state/dynamodb.ts';
import type { NodeProvider, PodProvider } from './provider.ts';

/**
 * What a provider's `factory.ts` implements and is given (the registry,
 * registry.ts, loads it). Apart from the registry so that a factory depends
 * on this contract, never on the registry that loads it.
 */

/** What a provider may need besides its own settings, built once per cold start by the composition root. */
export interface ProviderContext {
  /** The parts of the configuration a provider reads: the node settings (capacity, operating system, internal IP) and its parallelism. */
  config: { node: NodeSettings; pods: { maxParallel: number } };
  /** The state table, for a provider that keeps its own state in DynamoDB (the mock does). */
  table: StateTable;
  clock: Clock;
  log: Logger;
  /** AWS region of the deployment, for a provider's own AWS clients (which use the default credential chain). */
  region: string;
  /** Kubelet version the virtual nodes report in their node info. */
  kubeletVersion: string;
  /** The cluster, with the virtual kubelet's identity (the Docker provider reads pods' imagePullSecrets). */
  kube: KubeClients;
}

/** The two halves of a provider, as a factory builds them. */
export interface Providers {
  nodeProvider: NodeProvider;
  podProvider: PodProvider;
}

/** The lazily loaded module of a provider (`lib/provider/<name>/factory.ts`). */
export interface ProviderFactory<S> {
  /**
   * Builds the providers once per cold start. May reject (an unreachable
   * secret, say): the cold start then fails and Lambda retries it.
   */
  createProviders(settings: S, context: ProviderContext): Promise<Providers>;
}
