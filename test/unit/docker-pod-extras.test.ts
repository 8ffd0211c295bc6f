import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { createLogger } from '../../lib/log/logger.ts';
import { atomicLayout, updateLayout } from '../../lib/provider/docker/atomic-layout.ts';
import { infraConfig, instanceConfig } from '../../lib/provider/docker/container-config.ts';
import { engineHasSelinux, engineSelinuxOnce } from '../../lib/provider/docker/engine-selinux.ts';
import { managedHostsFile } from '../../lib/provider/docker/etc-hosts.ts';
import { fsGroupMode, volumeRootEntry } from '../../lib/provider/docker/fs-group.ts';
import { MOUNT_WAIT_MS, mountWaitOver, unableToMountMessage } from '../../lib/provider/docker/mount-wait.ts';
import { podPlan } from '../../lib/provider/docker/pod-plan.ts';
import { planEnv, planFromEnv } from '../../lib/provider/docker/pod-plan-codec.ts';
import { unsupportedFields } from '../../lib/provider/docker/pod-support.ts';
import { tarArchive } from '../../lib/provider/docker/tar-archive.ts';
import { VolumeDelivery } from '../../lib/provider/docker/volume-delivery.ts';
import { FakeClock } from '../support/fake-clock.ts';

const identity = { namespace: 'n', name: 'p', uid: 'u', node: 'vk' };
const settings = { network: 'bridge', infraImage: 'pause' };

function pod(spec: Partial<V1PodSpec>): V1Pod {
  return {
    metadata: { namespace: 'n', name: 'p', uid: 'u' },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }], ...spec },
  };
}

function planOf(p: V1Pod) {
  const plan = podPlan(p, identity, 'cluster.local');
  // What the engine keeps is what the provider acts on: every plan here goes through the codec.
  const kept = planFromEnv([planEnv(plan)]);
  assert.ok(kept, 'the plan survives its codec');
  return kept;
}

describe('docker provider: seLinuxOptions', () => {
  const selinuxPod = pod({
    securityContext: { seLinuxOptions: { level: 's0' } },
    containers: [
      { name: 'app', image: 'busybox:1.36' },
      {
        name: 'own',
        image: 'busybox:1.36',
        securityContext: { seLinuxOptions: { type: 'spc_t', user: 'system_u' } },
      },
    ],
  });

  it("accepts the pod's and a container's, as the EmptyDir conformance specs set them", () => {
    assert.deepEqual(unsupportedFields(selinuxPod, 'cluster.local'), []);
  });

  it("becomes the engine's label options only where its host has SELinux; a container's replaces the pod's whole", () => {
    const plan = planOf(selinuxPod);
    const [app, own] = plan.containers;
    assert.ok(app && own);
    assert.deepEqual(
      instanceConfig(plan, app, 'app', 0, 'i', 'podman', [], new Map(), { selinux: true }).HostConfig
        ?.SecurityOpt,
      ['label=level:s0'],
    );
    assert.deepEqual(
      instanceConfig(plan, own, 'app', 0, 'i', 'podman', [], new Map(), { selinux: true }).HostConfig
        ?.SecurityOpt,
      ['label=user:system_u', 'label=type:spc_t'],
    );
    assert.deepEqual(infraConfig(plan, settings, true).HostConfig?.SecurityOpt, ['label=level:s0']);
    assert.equal(
      instanceConfig(plan, app, 'app', 0, 'i', 'podman', [], new Map(), {}).HostConfig?.SecurityOpt,
      undefined,
    );
    assert.equal(infraConfig(plan, settings).HostConfig?.SecurityOpt, undefined);
  });

  it('keeps no-new-privileges beside the label', () => {
    const plan = planOf(
      pod({
        securityContext: { seLinuxOptions: { level: 's0:c1,c2' } },
        containers: [{ name: 'app', image: 'b', securityContext: { allowPrivilegeEscalation: false } }],
      }),
    );
    const app = plan.containers[0];
    assert.ok(app);
    assert.deepEqual(
      instanceConfig(plan, app, 'app', 0, 'i', 'docker', [], new Map(), { selinux: true }).HostConfig
        ?.SecurityOpt,
      ['no-new-privileges', 'label=level:s0:c1,c2'],
    );
  });

  it("reads SELinux from the engine's security options, once", async () => {
    assert.equal(
      engineHasSelinux({ SecurityOptions: ['name=seccomp,profile=default', 'name=selinux'] }),
      true,
    );
    assert.equal(
      engineHasSelinux({ SecurityOptions: ['name=seccomp,profile=default', 'name=rootless'] }),
      false,
    );
    assert.equal(engineHasSelinux({ SecurityOptions: null }), false);
    let asked = 0;
    const selinux = engineSelinuxOnce({
      info: async () => {
        asked++;
        if (asked === 1) throw new Error('engine not up');
        return { SecurityOptions: ['name=selinux'] };
      },
    });
    await assert.rejects(selinux(), /engine not up/);
    assert.equal(await selinux(), true);
    assert.equal(await selinux(), true);
    assert.equal(asked, 2, 'a failed ask is made again, a good answer kept');
  });
});

describe("docker provider: the pod's address in env", () => {
  // As the pipeline hands the pod over: resolved before the pod has an address, the reference kept beside.
  const resolved = pod({
    containers: [
      {
        name: 'app',
        image: 'busybox:1.36',
        env: [
          { name: 'POD_IP', value: '', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'POD_IPS', value: '', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } },
          { name: 'HOST_IP', value: '', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
          { name: 'POD_NAME', value: 'p', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'PLAIN', value: 'x=1' },
        ],
      },
    ],
  });

  it('sets status.podIP, status.podIPs and status.hostIP when the container is created, from the infra container', () => {
    const plan = planOf(resolved);
    const app = plan.containers[0];
    assert.ok(app);
    const config = instanceConfig(plan, app, 'app', 0, 'i', 'podman', [], new Map(), {
      podIp: '10.88.0.7',
      hostIp: '192.168.1.4',
    });
    assert.deepEqual(config.Env, [
      'POD_IP=10.88.0.7',
      'POD_IPS=10.88.0.7',
      'HOST_IP=192.168.1.4',
      'POD_NAME=p',
      'PLAIN=x=1',
    ]);
  });

  it('leaves a value the pipeline already resolved (a host IP it knew) and every other variable as it is', () => {
    const known = pod({
      containers: [
        {
          name: 'app',
          image: 'b',
          env: [
            { name: 'HOST_IP', value: '10.0.0.9', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
          ],
        },
      ],
    });
    const plan = planOf(known);
    const app = plan.containers[0];
    assert.ok(app);
    assert.equal(app.addressEnv, undefined);
    assert.deepEqual(
      instanceConfig(plan, app, 'app', 0, 'i', 'podman', [], new Map(), {
        podIp: '1.2.3.4',
        hostIp: '5.6.7.8',
      }).Env,
      ['HOST_IP=10.0.0.9'],
    );
  });
});

describe('docker provider: hostAliases in the kubelet-managed /etc/hosts', () => {
  it('writes one line per alias with all its hostnames, under the kubelet header', () => {
    assert.equal(
      managedHostsFile(['10.88.0.7'], 'web-0', 'web.shop.svc.cluster.local', [
        { ip: '123.45.67.89', hostnames: ['foo', 'bar'] },
        { ip: '::1', hostnames: ['v6'] },
      ]),
      [
        '# Kubernetes-managed hosts file.',
        '127.0.0.1\tlocalhost',
        '::1\tlocalhost ip6-localhost ip6-loopback',
        'fe00::0\tip6-localnet',
        'fe00::0\tip6-mcastprefix',
        'fe00::1\tip6-allnodes',
        'fe00::2\tip6-allrouters',
        '10.88.0.7\tweb-0.web.shop.svc.cluster.local\tweb-0',
        '',
        '# Entries added by HostAliases.',
        '123.45.67.89\tfoo\tbar',
        '::1\tv6',
        '',
      ].join('\n'),
    );
    assert.match(managedHostsFile(['10.88.0.7'], 'p', undefined, []), /\n10\.88\.0\.7\tp\n$/);
  });

  it('plans the file (and its volume) only for a pod with hostAliases', () => {
    const plan = planOf(pod({ hostAliases: [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }] }));
    assert.deepEqual(plan.hostAliases, [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }]);
    assert.ok(plan.volumes.some((v) => v.name === 'etc_hosts' && v.held));
    const plain = planOf(pod({}));
    assert.equal(plain.hostAliases, undefined);
    assert.equal(plain.volumes.length, 0);
  });
});

describe('docker provider: fsGroup', () => {
  const files = [
    { path: 'data-1', mode: 0o440, content: Buffer.from('value-1') },
    { path: 'dir/data-2', mode: 0o400, content: Buffer.from('value-2') },
  ];

  it('is accepted, with fsGroupChangePolicy, and every container gets it first among its supplementary groups', () => {
    const fsPod = pod({
      securityContext: { fsGroup: 1001, fsGroupChangePolicy: 'OnRootMismatch', supplementalGroups: [5, 6] },
      initContainers: [{ name: 'init', image: 'b' }],
    });
    assert.deepEqual(unsupportedFields(fsPod, 'cluster.local'), []);
    const plan = planOf(fsPod);
    assert.equal(plan.fsGroup, 1001);
    for (const c of [...plan.initContainers, ...plan.containers])
      assert.deepEqual(c.groupAdd, ['1001', '5', '6']);
  });

  it("puts a file volume's directories and files in the group with the kubelet's read-only bits and setgid", () => {
    const layout = atomicLayout(files, '..ts', 1001);
    const byName = new Map(layout.map((e) => [e.name, e]));
    assert.deepEqual(byName.get('.'), { type: 'dir', name: '.', mode: 0o2777, gid: 1001 });
    assert.deepEqual(byName.get('..ts'), { type: 'dir', name: '..ts', mode: 0o2755, gid: 1001 });
    assert.deepEqual(byName.get('..ts/dir'), { type: 'dir', name: '..ts/dir', mode: 0o2755, gid: 1001 });
    const data1 = byName.get('..ts/data-1');
    assert.ok(data1?.type === 'file');
    assert.equal(data1.mode, 0o440, 'defaultMode 0440 stays -r--r-----, as the Secrets spec expects');
    assert.equal(data1.gid, 1001);
    const data2 = byName.get('..ts/dir/data-2');
    assert.ok(data2?.type === 'file');
    assert.equal(data2.mode, 0o440, 'group read added to 0400');
    assert.deepEqual(byName.get('..data'), { type: 'symlink', name: '..data', target: '..ts' });
    // An update writes the same ownership.
    const update = updateLayout(files, '..ts2', 1001);
    assert.ok(update.every((e) => e.type === 'symlink' || e.gid === 1001));
    assert.equal(update.filter((e) => e.type !== 'symlink').length, 4);
  });

  it('changes nothing without one', () => {
    const layout = atomicLayout(files, '..ts');
    assert.ok(layout.every((e) => e.type === 'symlink' || e.gid === undefined));
    assert.equal(layout[0]?.name, '..ts', 'no entry for the volume root');
  });

  it("gives an emptyDir the kubelet's 0777, and with an fsGroup its group, read-write bits and setgid", () => {
    assert.deepEqual(volumeRootEntry(undefined), { type: 'dir', name: '.', mode: 0o777 });
    assert.deepEqual(volumeRootEntry(2000), { type: 'dir', name: '.', mode: 0o2777, gid: 2000 });
    assert.equal(fsGroupMode(0o644, false, false), 0o664);
    assert.equal(fsGroupMode(0o700, true, false), 0o2770);
    assert.equal(fsGroupMode(0o400, false, true), 0o440);
  });

  it('writes the group into the archive: ustar for a small id, a PAX record for a large one', () => {
    const tar = tarArchive([{ type: 'dir', name: '.', mode: 0o2777, gid: 1001 }], new Date(0));
    assert.equal(tar.subarray(0, 2).toString(), './');
    assert.equal(tar.subarray(100, 107).toString(), '0002777');
    assert.equal(tar.subarray(116, 123).toString(), '0001751');
    const big = tarArchive(
      [{ type: 'file', name: 'f', mode: 0o440, gid: 3_000_000_000, content: Buffer.from('x') }],
      new Date(0),
    );
    assert.equal(big.subarray(156, 157).toString(), 'x', 'a PAX header first');
    assert.match(big.subarray(512, 1024).toString(), / gid=3000000000\n/);
  });
});

describe('docker provider: the kubelet summary of a pod that cannot mount its volumes', () => {
  it('names the unmounted and unattached volumes in the kubelet words', () => {
    assert.equal(
      unableToMountMessage(['config'], ['config', 'scratch']),
      'Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[config scratch]: timed out waiting for the condition',
    );
    assert.equal(mountWaitOver(0, MOUNT_WAIT_MS - 1), false);
    assert.equal(mountWaitOver(0, MOUNT_WAIT_MS), true);
  });

  it('records one summary per 2 min 3 s of failed tries, beside each try its own MountVolume.SetUp Event', async () => {
    const clock = new FakeClock();
    const events: Array<{ reason: string; message: string }> = [];
    // The engine as the delivery sees it before a volume is filled: no `..data` in it.
    const notFound = Object.assign(new Error('no such file'), { statusCode: 404 });
    const docker = {
      getContainer: () => ({ infoArchive: async () => Promise.reject(notFound) }),
    } as unknown as Docker;
    const delivery = new VolumeDelivery({
      docker,
      clock,
      log: createLogger({ level: 'silent' }),
      sources: { configMap: async () => undefined, secret: async () => undefined },
      events: { record: async (_pod, _type, reason, message) => void events.push({ reason, message }) },
      swapImage: 'busybox',
      pullImage: async () => {},
    });
    const plan = planOf(
      pod({
        volumes: [
          { name: 'config', configMap: { name: 'missing' } },
          { name: 'scratch', emptyDir: {} },
        ],
        containers: [{ name: 'app', image: 'b', terminationMessagePath: '/dev/termination-log' }],
      }),
    );
    const eventPod = () => pod({});
    const summaries = () => events.filter((e) => e.message.startsWith('Unable to attach or mount volumes'));
    // A reconcile looks every 10 s for 5 minutes: tries as the back-off lets them, summaries at 2 min 3 s waits.
    for (let t = 0; t <= 300_000; t += 10_000) {
      assert.equal(await delivery.ensure(plan, 'infra', eventPod), false);
      if (t === 120_000) assert.equal(summaries().length, 0, 'none before 2 min 3 s');
      await clock.advance(10_000);
    }
    const tries = events.filter((e) => e.message.startsWith('MountVolume.SetUp failed for volume "config"'));
    assert.ok(tries.length >= 5, `tries: ${tries.length}`);
    assert.deepEqual(
      summaries().map((e) => e.reason),
      ['FailedMount', 'FailedMount'],
      'one at 2 min 10 s, one at 4 min 20 s: not one per try',
    );
    assert.equal(
      summaries()[0]?.message,
      'Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[config scratch]: timed out waiting for the condition',
    );
  });
});
