/**
 * Cluster access configuration and the kubeconfig held in Secrets Manager or
 * SSM: one source at a time, read once, and a bad kubeconfig named by where
 * it came from without a byte of its content.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock } from '../../lib/clock.ts';
import { ConfigError } from '../../lib/config/config.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import type { ClusterCredentialSources } from '../../lib/kube/aws-credential-sources.ts';
import { KubeConfigError } from '../../lib/kube/client.ts';
import { loadClusterKubeConfig } from '../../lib/kube/credentials.ts';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: 'https://10.0.0.1:6443', certificate-authority-data: Q0E= }
users:
- name: u
  user: { token: s3cr3t-token-value }
contexts:
- name: ctx
  context: { cluster: c, user: u }
current-context: ctx
`;

function sources(
  values: { secret?: string; parameter?: string },
  calls: string[] = [],
): ClusterCredentialSources {
  return {
    secretString: async (id) => {
      calls.push(`secret ${id}`);
      if (values.secret === undefined) throw new Error(`ResourceNotFoundException: ${id} not found`);
      return values.secret;
    },
    parameterValue: async (name) => {
      calls.push(`parameter ${name}`);
      if (values.parameter === undefined) throw new Error('ParameterNotFound');
      return values.parameter;
    },
    describeCluster: async () => assert.fail('not used'),
    credentials: async () => assert.fail('not used'),
  };
}

describe('cluster access configuration', () => {
  it('reads the secret, parameter and EKS settings', () => {
    assert.equal(
      loadConfig({ SVK_KUBECONFIG_SECRET: 'svk/kubeconfig' }).kube.kubeconfigSecret,
      'svk/kubeconfig',
    );
    assert.equal(
      loadConfig({ SVK_KUBECONFIG_PARAMETER: '/svk/prod/kubeconfig' }).kube.kubeconfigParameter,
      '/svk/prod/kubeconfig',
    );
    assert.deepEqual(
      loadConfig({ SVK_EKS_CLUSTER_NAME: 'prod', SVK_EKS_ENDPOINT: 'https://abc.eks.amazonaws.com' }).kube
        .eks,
      { clusterName: 'prod', endpoint: 'https://abc.eks.amazonaws.com' },
    );
    assert.equal(loadConfig({}).kube.eks, undefined);
  });

  it('refuses two ways to reach the cluster, and EKS settings without a cluster name', () => {
    assert.throws(
      () =>
        loadConfig({
          SVK_KUBECONFIG: '/tmp/k',
          SVK_EKS_CLUSTER_NAME: 'prod',
          SVK_EKS_CA_DATA: 'not base64!',
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /SVK_KUBECONFIG, SVK_EKS_CLUSTER_NAME name more than one way/);
        assert.match(err.message, /SVK_EKS_CA_DATA must be the base64/);
        return true;
      },
    );
    assert.throws(
      () => loadConfig({ SVK_EKS_ENDPOINT: 'https://x.example' }),
      /SVK_EKS_ENDPOINT is only used/,
    );
    assert.throws(() => loadConfig({ SVK_EKS_CLUSTER_NAME: 'p', SVK_EKS_ENDPOINT: 'http://x' }), /https URL/);
  });

  it('reads metric settings, off by default', () => {
    assert.deepEqual(loadConfig({}).metrics, {
      enabled: false,
      namespace: 'ServerlessVirtualKubelet',
      deployment: 'serverless-virtual-kubelet',
      service: 'serverless-virtual-kubelet',
      perNode: true,
    });
    const on = loadConfig({
      SVK_METRICS: 'emf',
      SVK_DEPLOYMENT_NAME: 'svk-prod',
      SVK_SERVICE_NAME: 'svk',
      SVK_METRICS_NODE_DIMENSION: 'false',
    });
    assert.equal(on.metrics.enabled, true);
    assert.equal(on.metrics.deployment, 'svk-prod');
    assert.equal(on.metrics.service, 'svk');
    assert.throws(
      () => loadConfig({ SVK_SERVICE_NAME: 'a b' }),
      /SVK_SERVICE_NAME must be letters, digits, \. _ -/,
    );
    assert.equal(on.metrics.perNode, false);
    assert.throws(() => loadConfig({ SVK_METRICS: 'yes' }), /SVK_METRICS must be emf or off/);
    assert.throws(() => loadConfig({ SVK_METRICS_NAMESPACE: 'AWS/Lambda' }), /must not start with AWS/);
  });
});

describe('kubeconfig from Secrets Manager or SSM', () => {
  const options = (s: ClusterCredentialSources) => ({ region: 'eu-west-1', clock: systemClock, sources: s });

  it('loads the kubeconfig a secret or a parameter holds', async () => {
    const calls: string[] = [];
    const fromSecret = await loadClusterKubeConfig(
      { kubeconfigSecret: 'svk/kubeconfig' },
      options(sources({ secret: KUBECONFIG }, calls)),
    );
    assert.equal(fromSecret.server, 'https://10.0.0.1:6443');
    const fromParameter = await loadClusterKubeConfig(
      { kubeconfigParameter: '/svk/kubeconfig' },
      options(sources({ parameter: KUBECONFIG }, calls)),
    );
    assert.equal(fromParameter.token, 's3cr3t-token-value');
    assert.deepEqual(calls, ['secret svk/kubeconfig', 'parameter /svk/kubeconfig']);
  });

  it('names the source of an unreadable or invalid kubeconfig, never its content', async () => {
    const broken = `${KUBECONFIG}\n  bad: [indentation\n`;
    await assert.rejects(
      loadClusterKubeConfig({ kubeconfigSecret: 'svk/kc' }, options(sources({ secret: broken }))),
      (err: unknown) => {
        assert.ok(err instanceof KubeConfigError);
        assert.match(err.message, /kubeconfig in Secrets Manager secret svk\/kc is not a usable kubeconfig/);
        const everything = JSON.stringify(err, Object.getOwnPropertyNames(err)) + String(err.stack);
        assert.doesNotMatch(everything, /s3cr3t|token-value|10\.0\.0\.1/);
        assert.equal(err.cause, undefined);
        return true;
      },
    );
    await assert.rejects(
      loadClusterKubeConfig({ kubeconfigParameter: '/svk/kc' }, options(sources({}))),
      /cannot read the kubeconfig from SSM parameter \/svk\/kc: Error: ParameterNotFound/,
    );
  });
});
