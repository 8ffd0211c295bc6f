import type { ProviderContext, Providers } from '../provider-factory.ts';
import { MockNodeProvider } from './mock-node.ts';
import { DynamoDbMockNodeStore } from './mock-node-store.ts';
import { MockPodProvider } from './mock-pods.ts';
import type { MockSettings } from './settings.ts';

/** Builds the mock provider: node overrides and pods both live in the state table. */
export async function createProviders(_settings: MockSettings, context: ProviderContext): Promise<Providers> {
  const { config, table, clock, kubeletVersion } = context;
  return {
    nodeProvider: new MockNodeProvider({
      store: new DynamoDbMockNodeStore(table),
      capacity: config.node.capacity,
      operatingSystem: config.node.operatingSystem,
      kubeletVersion,
      clock,
    }),
    podProvider: new MockPodProvider({
      table,
      clock,
      ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
    }),
  };
}
