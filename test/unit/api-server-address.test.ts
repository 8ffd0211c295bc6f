/**
 * The API server address pods are given (KUBERNETES_SERVICE_HOST/PORT and
 * the KUBERNETES_PORT* link variables): SVK_POD_API_SERVER, else the
 * kubeconfig's API server unless it is on loopback.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { ConfigError } from '../../lib/config/config.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { apiServerOfKubeconfig, withApiServerAddress } from '../../lib/pod/env/api-server-address.ts';
import type { EnvSources } from '../../lib/pod/env/env-sources.ts';
import { podServiceEnv } from '../../lib/pod/env/service-env.ts';
import { parseHostPort } from '../../lib/util/host-port.ts';

const service = (namespace: string, name: string, clusterIP: string): V1Service => ({
  metadata: { namespace, name },
  spec: { clusterIP, ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
});

const sources = (services: V1Service[]): EnvSources => ({
  configMap: async () => undefined,
  secret: async () => undefined,
  services: async (namespace, name) =>
    services.filter(
      (s) => s.metadata?.namespace === namespace && (name === undefined || s.metadata?.name === name),
    ),
});

const pod = (namespace: string) => ({
  metadata: { namespace, name: 'p' },
  spec: { containers: [{ name: 'app' }] },
});

describe('the API server address pods are given', () => {
  const cluster = [service('default', 'kubernetes', '10.0.0.1'), service('shop', 'kubernetes', '10.0.0.9')];

  it('points the kubernetes service variables at the address, in every namespace', async () => {
    const env = await podServiceEnv(
      pod('apps'),
      withApiServerAddress(sources(cluster), { host: '10.192.7.1', port: 6443 }),
    );
    assert.deepEqual(Object.fromEntries(env), {
      KUBERNETES_SERVICE_HOST: '10.192.7.1',
      KUBERNETES_SERVICE_PORT: '6443',
      KUBERNETES_SERVICE_PORT_HTTPS: '6443',
      KUBERNETES_PORT: 'tcp://10.192.7.1:6443',
      KUBERNETES_PORT_6443_TCP: 'tcp://10.192.7.1:6443',
      KUBERNETES_PORT_6443_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_6443_TCP_PORT: '6443',
      KUBERNETES_PORT_6443_TCP_ADDR: '10.192.7.1',
    });
    const inDefault = await podServiceEnv(
      pod('default'),
      withApiServerAddress(sources(cluster), { host: 'api.example.com', port: 443 }),
    );
    assert.equal(inDefault.get('KUBERNETES_SERVICE_HOST'), 'api.example.com');
  });

  it("leaves a namespace's own Service named kubernetes alone, as the kubelet gives it priority", async () => {
    const env = await podServiceEnv(
      pod('shop'),
      withApiServerAddress(sources(cluster), { host: '10.192.7.1', port: 6443 }),
    );
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.0.0.9');
  });

  it('gives the Service as it is without an address', async () => {
    const env = await podServiceEnv(pod('apps'), withApiServerAddress(sources(cluster), undefined));
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.0.0.1');
    assert.equal(env.get('KUBERNETES_SERVICE_PORT'), '443');
  });

  it("defaults to the kubeconfig's API server, not one on loopback", () => {
    assert.deepEqual(apiServerOfKubeconfig('https://ABC.gr7.us-east-1.eks.amazonaws.com'), {
      host: 'abc.gr7.us-east-1.eks.amazonaws.com',
      port: 443,
    });
    assert.deepEqual(apiServerOfKubeconfig('https://10.1.2.3:6443'), { host: '10.1.2.3', port: 6443 });
    assert.deepEqual(apiServerOfKubeconfig('https://[fd00::1]:6443'), { host: 'fd00::1', port: 6443 });
    assert.equal(apiServerOfKubeconfig('https://127.0.0.1:6443'), undefined);
    assert.equal(apiServerOfKubeconfig('https://localhost:6443'), undefined);
  });

  it('reads SVK_POD_API_SERVER, and refuses a bad one naming the variable', () => {
    assert.deepEqual(loadConfig({ SVK_POD_API_SERVER: '10.192.7.1:6443' }).pods.apiServer, {
      host: '10.192.7.1',
      port: 6443,
    });
    assert.equal(loadConfig({}).pods.apiServer, undefined);
    for (const bad of ['10.192.7.1', 'https://10.0.0.1:443', '10.0.0.1:70000', '300.1.1.1:443', ':443']) {
      assert.throws(
        () => loadConfig({ SVK_POD_API_SERVER: bad }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.issues.some((i) => i.variable === 'SVK_POD_API_SERVER' && /must be host:port/.test(i.message)),
        bad,
      );
    }
    assert.deepEqual(parseHostPort('[fd00::1]:443'), { host: 'fd00::1', port: 443 });
  });
});
