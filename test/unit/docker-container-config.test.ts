import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { infraConfig, instanceConfig } from '../../lib/provider/docker/container-config.ts';
import { engineKindOf, engineKindOnce } from '../../lib/provider/docker/engine-kind.ts';
import { podPlan } from '../../lib/provider/docker/pod-plan.ts';

describe('docker provider: a container joins its pod', () => {
  const plan = podPlan(
    {
      metadata: { namespace: 'n', name: 'web-0', uid: 'u' },
      spec: { hostname: 'box', containers: [{ name: 'app', image: 'busybox:1.36' }] },
    },
    { namespace: 'n', name: 'web-0', uid: 'u', node: 'vk' },
    'cluster.local',
  );
  const app = plan.containers[0];

  it("shares the infra container's hostname: Podman joins its UTS namespace, Docker Engine copies it", () => {
    assert.ok(app);
    const podman = instanceConfig(plan, app, 'app', 0, 'infra-id', 'podman').HostConfig;
    assert.equal(podman?.UTSMode, 'container:infra-id');
    assert.equal(podman?.NetworkMode, 'container:infra-id');
    const docker = instanceConfig(plan, app, 'app', 0, 'infra-id', 'docker');
    // Docker Engine refuses a UTS mode of another container, and a hostname beside a joined network.
    assert.equal(docker.HostConfig?.UTSMode, undefined);
    assert.equal(docker.Hostname, undefined);
  });

  it("sets a StatefulSet pod's hostname and domain on its infra container, or its FQDN as the hostname", () => {
    const settings = { network: 'bridge', infraImage: 'pause' };
    const identity = { namespace: 'shop', name: 'web-0', uid: 'u', node: 'vk' };
    const spec = {
      hostname: 'web-0',
      subdomain: 'web',
      containers: [{ name: 'app', image: 'busybox:1.36' }],
    };
    const short = infraConfig(podPlan({ metadata: identity, spec }, identity, 'cluster.local'), settings);
    assert.equal(short.Hostname, 'web-0');
    assert.equal(short.Domainname, 'web.shop.svc.cluster.local');
    const fqdn = infraConfig(
      podPlan({ metadata: identity, spec: { ...spec, setHostnameAsFQDN: true } }, identity, 'cluster.local'),
      settings,
    );
    assert.equal(fqdn.Hostname, 'web-0.web.shop.svc.cluster.local');
    assert.equal(fqdn.Domainname, undefined);
    assert.equal(infraConfig(plan, settings).Domainname, undefined, 'no subdomain, no domain');
  });

  it("holds each emptyDir in the infra container, so a medium: Memory one's files outlive a container's restart", () => {
    const identity = { namespace: 'n', name: 'counter', uid: 'u', node: 'vk' };
    const spec = {
      volumes: [
        { name: 'count', emptyDir: { medium: 'Memory' } },
        { name: 'disk', emptyDir: {} },
      ],
      containers: [{ name: 'app', image: 'busybox:1.36' }],
    };
    const infra = infraConfig(podPlan({ metadata: identity, spec }, identity, 'cluster.local'), {
      network: 'bridge',
      infraImage: 'pause',
    });
    const binds = infra.HostConfig?.Binds ?? [];
    // Every emptyDir: the infra container also sets its directory's mode and group through it (empty-dirs.ts).
    assert.deepEqual(binds, ['svk_u_count:/.svk-volumes/count', 'svk_u_disk:/.svk-volumes/disk']);
    assert.equal(infraConfig(plan, { network: 'bridge', infraImage: 'pause' }).HostConfig?.Binds, undefined);
  });

  it("runs command and args with $(VAR) expanded from the container's env, an unknown one as written", () => {
    const identity = { namespace: 'n', name: 'job-1', uid: 'u' };
    const env = [{ name: 'TEST_VAR', value: 'test-value' }];
    const expanded = podPlan(
      {
        metadata: identity,
        spec: {
          containers: [
            {
              name: 'cmd',
              image: 'busybox',
              command: ['sh', '-c', 'TEST_VAR=wrong echo "$(TEST_VAR)"'],
              env,
            },
            {
              name: 'args',
              image: 'busybox',
              command: ['sh', '-c'],
              args: ['echo $(TEST_VAR) $$(TEST_VAR) $(NOPE)'],
              env,
            },
          ],
        },
      },
      { ...identity, node: 'vk' },
      'cluster.local',
    );
    const [cmd, args] = expanded.containers;
    assert.ok(cmd && args);
    const created = instanceConfig(expanded, cmd, 'app', 0, 'infra-id', 'podman');
    assert.deepEqual(created.Entrypoint, ['sh', '-c', 'TEST_VAR=wrong echo "test-value"']);
    assert.deepEqual(created.Cmd, []);
    const withArgs = instanceConfig(expanded, args, 'app', 0, 'infra-id', 'podman');
    assert.deepEqual(withArgs.Cmd, ['echo test-value $(TEST_VAR) $(NOPE)']);
  });

  it('tells Podman from Docker Engine by the components /version names', () => {
    assert.equal(engineKindOf({ Components: [{ Name: 'Podman Engine' }] }), 'podman');
    assert.equal(engineKindOf({ Components: [{ Name: 'Engine' }] }), 'docker');
    assert.equal(engineKindOf({}), 'docker');
  });

  it('asks the engine once, and again after a failed ask', async () => {
    let asks = 0;
    const kind = engineKindOnce({
      version: async () => {
        asks += 1;
        if (asks === 1) throw new Error('engine unreachable');
        return { Components: [{ Name: 'Podman Engine' }] };
      },
    });
    await assert.rejects(kind(), /engine unreachable/);
    assert.equal(await kind(), 'podman');
    assert.equal(await kind(), 'podman');
    assert.equal(asks, 2);
  });
});
