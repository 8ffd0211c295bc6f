import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../lib/config/config.ts';
import { loadConfig } from '../../lib/config/load-config.ts';

/** Asserts that `env` is rejected with an issue on `variable` whose message matches. */
function rejects(env: Record<string, string>, variable: string, message: RegExp): void {
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, 'a ConfigError');
      const issue = err.issues.find((i) => i.variable === variable);
      assert.ok(issue, `an issue on ${variable}, got ${err.message}`);
      assert.match(issue.message, message);
      assert.match(err.message, new RegExp(variable));
      return true;
    },
  );
}

describe('configuration', () => {
  it('has working defaults', () => {
    const config = loadConfig({});
    assert.deepEqual(config.nodeNames, ['virtual-kubelet']);
    assert.equal(config.node.leaseDurationSeconds, 40);
    assert.equal(config.node.leaseRenewIntervalMs, 10_000);
    assert.equal(config.node.statusIntervalMs, 60_000);
    assert.deepEqual(config.node.taints, [
      { key: 'virtual-kubelet.io/provider', value: 'mock', effect: 'NoSchedule' },
    ]);
    assert.equal(config.node.capacity.pods, '110');
  });

  it('parses node names, labels, taints and capacity', () => {
    const config = loadConfig({
      SVK_NODE_NAMES: 'vk-a, vk-b.example',
      SVK_NODE_LABELS: 'team=infra,example.com/tier=edge',
      SVK_NODE_TAINTS: 'dedicated=vk:NoExecute,spot:PreferNoSchedule',
      SVK_NODE_CAPACITY: 'cpu=4,memory=16Gi,pods=50',
    });
    assert.deepEqual(config.nodeNames, ['vk-a', 'vk-b.example']);
    assert.deepEqual(config.node.labels, { team: 'infra', 'example.com/tier': 'edge' });
    assert.deepEqual(config.node.taints, [
      { key: 'dedicated', value: 'vk', effect: 'NoExecute' },
      { key: 'spot', effect: 'PreferNoSchedule' },
    ]);
    assert.deepEqual(config.node.capacity, { cpu: '4', memory: '16Gi', pods: '50' });
  });

  it('an empty SVK_NODE_TAINTS means no taints', () => {
    assert.deepEqual(loadConfig({ SVK_NODE_TAINTS: '' }).node.taints, []);
  });

  it('rejects node names that are not DNS-1123 subdomains', () => {
    rejects({ SVK_NODE_NAMES: 'Virtual_Node' }, 'SVK_NODE_NAMES', /"Virtual_Node" is not a valid node name/);
    rejects({ SVK_NODE_NAMES: 'a'.repeat(254) }, 'SVK_NODE_NAMES', /at most 253/);
    rejects({ SVK_NODE_NAMES: 'vk,vk' }, 'SVK_NODE_NAMES', /names a node twice/);
  });

  it('rejects a lease duration that does not exceed 3 renew intervals', () => {
    rejects(
      { SVK_NODE_LEASE_DURATION_SECONDS: '30', SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS: '10' },
      'SVK_NODE_LEASE_DURATION_SECONDS',
      /must exceed 3 renew intervals/,
    );
  });

  it('rejects intervals that are not whole numbers or out of range', () => {
    rejects({ SVK_NODE_STATUS_INTERVAL_SECONDS: '1m' }, 'SVK_NODE_STATUS_INTERVAL_SECONDS', /whole number/);
    rejects({ SVK_PING_INTERVAL_SECONDS: '0' }, 'SVK_PING_INTERVAL_SECONDS', /at least 1/);
    rejects({ SVK_KUBELET_PORT: '70000' }, 'SVK_KUBELET_PORT', /at most 65535/);
  });

  it('rejects capacity that is not a quantity or lacks pods', () => {
    rejects(
      { SVK_NODE_CAPACITY: 'cpu=lots,pods=10' },
      'SVK_NODE_CAPACITY',
      /"cpu=lots" is not a resource quantity/,
    );
    rejects({ SVK_NODE_CAPACITY: 'cpu=4' }, 'SVK_NODE_CAPACITY', /must include pods/);
  });

  it('rejects bad taints', () => {
    rejects({ SVK_NODE_TAINTS: 'novalue' }, 'SVK_NODE_TAINTS', /is not key\[=value\]:Effect/);
    rejects({ SVK_NODE_TAINTS: 'a=b:Sometimes' }, 'SVK_NODE_TAINTS', /effect "Sometimes" must be one of/);
    rejects({ SVK_NODE_TAINTS: 'bad key=b:NoSchedule' }, 'SVK_NODE_TAINTS', /taint key "bad key"/);
  });

  it('rejects bad labels', () => {
    rejects({ SVK_NODE_LABELS: 'Bad.Prefix/x=1' }, 'SVK_NODE_LABELS', /prefix "Bad.Prefix"/);
    rejects({ SVK_NODE_LABELS: `k=${'v'.repeat(64)}` }, 'SVK_NODE_LABELS', /at most 63/);
  });

  it('rejects a lock poll not shorter than the lock TTL', () => {
    rejects({ SVK_LOCK_TTL_SECONDS: '2', SVK_LOCK_POLL_MS: '2000' }, 'SVK_LOCK_POLL_MS', /shorter than/);
  });

  it('rejects other enumerations and formats', () => {
    rejects({ SVK_PROVIDER: 'fargate' }, 'SVK_PROVIDER', /must be one of: mock/);
    rejects({ SVK_LOG_LEVEL: 'loud' }, 'SVK_LOG_LEVEL', /must be one of/);
    rejects({ SVK_NODE_INTERNAL_IP: '300.1.1.1' }, 'SVK_NODE_INTERNAL_IP', /IPv4/);
    rejects({ SVK_DYNAMODB_ENDPOINT: 'not a url' }, 'SVK_DYNAMODB_ENDPOINT', /URL/);
    rejects({ SVK_RELEASE: 'v1' }, 'SVK_RELEASE', /version like 1.2.3/);
  });

  it('names every bad variable at once', () => {
    assert.throws(
      () => loadConfig({ SVK_NODE_NAMES: 'A', SVK_KUBELET_PORT: 'x', SVK_NODE_LEASE_DURATION_SECONDS: '12' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        ['SVK_NODE_NAMES', 'SVK_KUBELET_PORT', 'SVK_NODE_LEASE_DURATION_SECONDS'].every((v) =>
          err.issues.some((i) => i.variable === v),
        ),
    );
  });

  it('defaults the release to package.json and validates the gating releases', async () => {
    const pkg = (await import('../../package.json', { with: { type: 'json' } })).default;
    const config = loadConfig({});
    assert.equal(config.release, pkg.version);
    assert.equal(config.reconcile.intervalMs, 30_000);
    assert.equal(config.gating.releaseRecordTtlMs, 300_000);
    rejects({ SVK_RELEASE: 'v1.2' }, 'SVK_RELEASE', /must be a version like 1\.2\.3/);
    rejects({ SVK_MIN_COMPATIBLE_RELEASE: '1.2' }, 'SVK_MIN_COMPATIBLE_RELEASE', /must be a version/);
    rejects(
      { SVK_RELEASE: '1.0.0', SVK_MIN_COMPATIBLE_RELEASE: '1.1.0' },
      'SVK_MIN_COMPATIBLE_RELEASE',
      /must not exceed SVK_RELEASE \(1\.0\.0\)/,
    );
    rejects(
      { SVK_RELEASE: '1.0.0', SVK_REQUIRED_RECONCILER_RELEASE: '2.0.0' },
      'SVK_REQUIRED_RECONCILER_RELEASE',
      /must not exceed SVK_RELEASE/,
    );
    rejects({ SVK_RECONCILE_INTERVAL_SECONDS: '0' }, 'SVK_RECONCILE_INTERVAL_SECONDS', /at least 1/);
    rejects({ SVK_RELEASE_RECORD_TTL_SECONDS: 'x' }, 'SVK_RELEASE_RECORD_TTL_SECONDS', /whole number/);
  });

  it('caches the reconciler status 10 s by default, 0 to never, at most half the release record TTL', () => {
    assert.equal(loadConfig({}).gating.statusCacheMs, 10_000);
    assert.equal(loadConfig({ SVK_RELEASE_STATUS_CACHE_SECONDS: '0' }).gating.statusCacheMs, 0);
    assert.equal(
      loadConfig({ SVK_RELEASE_RECORD_TTL_SECONDS: '10', SVK_RELEASE_STATUS_CACHE_SECONDS: '5' }).gating
        .statusCacheMs,
      5_000,
    );
    rejects({ SVK_RELEASE_STATUS_CACHE_SECONDS: '-1' }, 'SVK_RELEASE_STATUS_CACHE_SECONDS', /whole number/);
    rejects(
      { SVK_RELEASE_STATUS_CACHE_SECONDS: '151' },
      'SVK_RELEASE_STATUS_CACHE_SECONDS',
      /\(151\) must be at most half of SVK_RELEASE_RECORD_TTL_SECONDS \(300\)/,
    );
    rejects(
      { SVK_RELEASE_RECORD_TTL_SECONDS: '10' },
      'SVK_RELEASE_STATUS_CACHE_SECONDS',
      /\(10\) must be at most half of SVK_RELEASE_RECORD_TTL_SECONDS \(10\)/,
    );
  });

  it('checks rules between variables on the values that parsed, whatever else failed', () => {
    assert.throws(
      () =>
        loadConfig({
          SVK_LOCK_TTL_SECONDS: 'soon',
          SVK_NODE_LEASE_DURATION_SECONDS: '20',
          SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS: '10',
          SVK_RELEASE_STATUS_CACHE_SECONDS: '200',
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.issues.map((i) => i.variable).sort(), [
          'SVK_LOCK_TTL_SECONDS',
          'SVK_NODE_LEASE_DURATION_SECONDS',
          'SVK_RELEASE_STATUS_CACHE_SECONDS',
        ]);
        return true;
      },
    );
  });

  it('never reports a rule between variables on a variable that failed its own rule', () => {
    assert.throws(
      () => loadConfig({ SVK_EKS_CLUSTER_NAME: '-bad', SVK_EKS_ENDPOINT: 'https://x.example' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(
          err.issues.map((i) => i.variable),
          ['SVK_EKS_CLUSTER_NAME'],
        );
        return true;
      },
    );
  });

  it('selects the provider through the registry, with its settings and its default taint', () => {
    assert.deepEqual(loadConfig({}).provider, { name: 'mock', settings: {} });
    assert.deepEqual(loadConfig({ SVK_PROVIDER: 'mock', SVK_NODE_TAINTS: 'a=b:NoSchedule' }).provider, {
      name: 'mock',
      settings: {},
    });
  });
});
