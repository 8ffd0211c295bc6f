import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { MockNodeProvider } from '../../lib/provider/mock/mock-node.ts';
import { MockPodProvider } from '../../lib/provider/mock/mock-pods.ts';
import {
  createProviders,
  isProviderName,
  PROVIDER_NAMES,
  parseProviderSettings,
} from '../../lib/provider/registry.ts';
import { createDynamoDbClient, StateTable } from '../../lib/state/dynamodb.ts';

describe('provider registry', () => {
  it('knows the mock and ecs-fargate providers by name, and nothing else by accident', () => {
    assert.deepEqual(PROVIDER_NAMES, ['mock', 'ecs-fargate']);
    assert.equal(isProviderName('mock'), true);
    assert.equal(isProviderName('ecs-fargate'), true);
    for (const name of ['fargate', 'toString', '__proto__', ''])
      assert.equal(isProviderName(name), false, name);
  });

  it('parses the mock settings (none) into the config', () => {
    assert.deepEqual(parseProviderSettings('mock', {}), {
      ok: true,
      settings: { name: 'mock', settings: {} },
    });
  });

  it('loads the chosen provider factory lazily and builds both providers from the config', async () => {
    const config = loadConfig({ SVK_NODE_CAPACITY: 'cpu=4,pods=7', SVK_NODE_OS: 'windows' });
    const table = new StateTable(createDynamoDbClient({ endpoint: 'http://127.0.0.1:9' }).doc, 'unused');
    const { nodeProvider, podProvider } = await createProviders(config.provider, {
      config,
      table,
      clock: systemClock,
      log: createLogger({ level: 'silent' }),
      region: 'eu-west-1',
      kubeletVersion: 'v1.20.2-test',
    });
    assert.ok(nodeProvider instanceof MockNodeProvider);
    assert.equal(nodeProvider.name, 'mock');
    assert.ok(podProvider instanceof MockPodProvider);
  });
});
