import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { createKubeClients } from '../../lib/kube/client.ts';
import { KubeContext } from '../../lib/kube/kube-context.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { DockerNodeProvider } from '../../lib/provider/docker/docker-node.ts';
import { DockerPodProvider } from '../../lib/provider/docker/docker-pods.ts';
import { MockNodeProvider } from '../../lib/provider/mock/mock-node.ts';
import { MockPodProvider } from '../../lib/provider/mock/mock-pods.ts';
import {
  createProviders,
  isProviderName,
  PROVIDER_NAMES,
  parseProviderSettings,
} from '../../lib/provider/registry.ts';
import { StateTable } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';

describe('provider registry', () => {
  it('knows the mock, docker and ecs-fargate providers by name, and nothing else by accident', () => {
    assert.deepEqual(PROVIDER_NAMES, ['mock', 'docker', 'ecs-fargate']);
    assert.equal(isProviderName('mock'), true);
    assert.equal(isProviderName('docker'), true);
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

  it('parses the docker settings into the config, with their defaults', () => {
    const parsed = parseProviderSettings('docker', { DOCKER_HOST: 'unix:///run/podman/podman.sock' });
    assert.ok(parsed.ok);
    assert.equal(parsed.settings.name, 'docker');
    assert.deepEqual(parsed.settings.settings.endpoint, {
      kind: 'unix',
      socketPath: '/run/podman/podman.sock',
    });
  });

  function context(config: ReturnType<typeof loadConfig>) {
    const kc = new KubeContext({
      name: 'unused',
      server: 'https://127.0.0.1:9',
      insecureSkipTlsVerify: true,
    });
    return {
      config,
      table: new StateTable(createDynamoDbClient({ endpoint: 'http://127.0.0.1:9' }).doc, 'unused'),
      clock: systemClock,
      log: createLogger({ level: 'silent' }),
      region: 'eu-west-1',
      kubeletVersion: 'v1.20.2-test',
      kube: createKubeClients(kc),
    };
  }

  it('loads the chosen provider factory lazily and builds both providers from the config', async () => {
    const config = loadConfig({ SVK_NODE_CAPACITY: 'cpu=4,pods=7', SVK_NODE_OS: 'windows' });
    const { nodeProvider, podProvider } = await createProviders(config.provider, context(config));
    assert.ok(nodeProvider instanceof MockNodeProvider);
    assert.equal(nodeProvider.name, 'mock');
    assert.ok(podProvider instanceof MockPodProvider);
  });

  it('builds the docker providers for SVK_PROVIDER=docker (a unix socket: nothing is read to connect)', async () => {
    const config = loadConfig({ SVK_PROVIDER: 'docker', SVK_DOCKER_HOST: 'unix:///nonexistent/docker.sock' });
    assert.deepEqual(config.node.taints, [
      { key: 'virtual-kubelet.io/provider', value: 'docker', effect: 'NoSchedule' },
    ]);
    const { nodeProvider, podProvider } = await createProviders(config.provider, context(config));
    assert.ok(nodeProvider instanceof DockerNodeProvider);
    assert.equal(nodeProvider.name, 'docker');
    assert.ok(podProvider instanceof DockerPodProvider);
    await assert.rejects(nodeProvider.ping('vk-1'), /docker engine does not answer/);
  });
});
