import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { EngineTlsError, parseTlsSecret } from '../../lib/provider/docker/engine-client.ts';
import { podPlan, pullPolicy } from '../../lib/provider/docker/pod-plan.ts';
import { unsupportedFields } from '../../lib/provider/docker/pod-support.ts';
import { findAuth, imageRegistry, pullScope } from '../../lib/provider/docker/registry-auth.ts';
import { parseDockerSettings } from '../../lib/provider/docker/settings.ts';

describe('docker provider settings', () => {
  it('defaults to the local Docker socket, the bridge network and the pause image', () => {
    assert.deepEqual(parseDockerSettings({}), {
      ok: true,
      settings: {
        endpoint: { kind: 'unix', socketPath: '/var/run/docker.sock' },
        network: 'bridge',
        infraImage: 'registry.k8s.io/pause:3.10',
        pullTimeoutMs: 600_000,
        clusterDomain: 'cluster.local',
        proberImage: 'docker.io/library/node:22-alpine',
        engineSocket: '/var/run/docker.sock',
      },
    });
  });

  it('takes DOCKER_HOST when SVK_DOCKER_HOST is not set', () => {
    const parsed = parseDockerSettings({ DOCKER_HOST: 'unix:///run/podman/podman.sock' });
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.settings.endpoint, { kind: 'unix', socketPath: '/run/podman/podman.sock' });
    assert.equal(
      parsed.settings.engineSocket,
      '/run/podman/podman.sock',
      "the prober mounts the engine's socket",
    );
  });

  it("mounts the engine host's socket named by SVK_DOCKER_ENGINE_SOCKET into the probers of a tcp:// engine", () => {
    const parsed = parseDockerSettings({
      SVK_DOCKER_HOST: 'tcp://10.0.0.5:2376',
      SVK_DOCKER_CERT_PATH: '/certs',
      SVK_DOCKER_ENGINE_SOCKET: '/run/podman/podman.sock',
      SVK_DOCKER_PROBER_IMAGE: 'registry.example.com/node:22',
    });
    assert.ok(parsed.ok);
    assert.equal(parsed.settings.engineSocket, '/run/podman/podman.sock');
    assert.equal(parsed.settings.proberImage, 'registry.example.com/node:22');
    assert.deepEqual(parseDockerSettings({ SVK_DOCKER_ENGINE_SOCKET: 'docker.sock' }), {
      ok: false,
      issues: [
        { variable: 'SVK_DOCKER_ENGINE_SOCKET', message: 'must be an absolute path on the engine host' },
      ],
    });
  });

  it('reaches a tcp:// engine only with TLS client authentication', () => {
    const secret = parseDockerSettings({
      SVK_DOCKER_HOST: 'tcp://10.0.0.5:2376',
      SVK_DOCKER_TLS_SECRET: 'svk/engine-tls',
    });
    assert.ok(secret.ok);
    assert.deepEqual(secret.settings.endpoint, {
      kind: 'tcp',
      host: '10.0.0.5',
      port: 2376,
      tls: { secret: 'svk/engine-tls' },
    });
    const plain = parseDockerSettings({ SVK_DOCKER_HOST: 'tcp://10.0.0.5:2375' });
    assert.ok(!plain.ok);
    assert.equal(plain.issues[0]?.variable, 'SVK_DOCKER_HOST');
    assert.match(plain.issues[0]?.message ?? '', /SVK_DOCKER_TLS_SECRET/);
    const both = parseDockerSettings({
      SVK_DOCKER_HOST: 'tcp://10.0.0.5:2376',
      SVK_DOCKER_TLS_SECRET: 's',
      SVK_DOCKER_CERT_PATH: '/certs',
    });
    assert.ok(!both.ok);
    assert.equal(both.issues[0]?.variable, 'SVK_DOCKER_TLS_SECRET, SVK_DOCKER_CERT_PATH');
  });

  it('names every bad variable at once', () => {
    const parsed = parseDockerSettings({
      SVK_DOCKER_HOST: 'ssh://user@host',
      SVK_DOCKER_NETWORK: '-bad',
      SVK_DOCKER_PULL_TIMEOUT_SECONDS: '5',
      SVK_DOCKER_HOST_IP: 'not-an-ip',
      SVK_DOCKER_CLUSTER_DOMAIN: 'Cluster.Local',
    });
    assert.ok(!parsed.ok);
    assert.deepEqual(parsed.issues.map((i) => i.variable).sort(), [
      'SVK_DOCKER_CLUSTER_DOMAIN',
      'SVK_DOCKER_HOST',
      'SVK_DOCKER_HOST_IP',
      'SVK_DOCKER_NETWORK',
      'SVK_DOCKER_PULL_TIMEOUT_SECONDS',
    ]);
  });

  it('takes the cluster domain as a DNS name, cluster.local by default', () => {
    const parsed = parseDockerSettings({ SVK_DOCKER_CLUSTER_DOMAIN: ' corp.example.com ' });
    assert.ok(parsed.ok);
    assert.equal(parsed.settings.clusterDomain, 'corp.example.com');
    // An empty variable is an unset one: the default.
    assert.ok(parseDockerSettings({ SVK_DOCKER_CLUSTER_DOMAIN: '' }).ok);
    for (const bad of [
      '.cluster.local',
      'cluster..local',
      'cluster.local.',
      'clus_ter.local',
      '-a.b',
      `${'a'.repeat(64)}.local`,
    ]) {
      const refused = parseDockerSettings({ SVK_DOCKER_CLUSTER_DOMAIN: bad });
      assert.ok(!refused.ok, bad);
      assert.deepEqual(
        refused.issues.map((i) => i.variable),
        ['SVK_DOCKER_CLUSTER_DOMAIN'],
        bad,
      );
    }
  });

  it('refuses TLS settings for a unix socket', () => {
    const parsed = parseDockerSettings({ SVK_DOCKER_CERT_PATH: '/certs' });
    assert.ok(!parsed.ok);
    assert.deepEqual(
      parsed.issues.map((i) => i.variable),
      ['SVK_DOCKER_CERT_PATH'],
    );
  });
});

describe('docker provider TLS secret', () => {
  it('reads ca, cert and key, and never quotes them in its errors', () => {
    const pem = (what: string) => `-----BEGIN ${what}-----\nSECRETDATA\n-----END ${what}-----\n`;
    const good = JSON.stringify({
      ca: pem('CERTIFICATE'),
      cert: pem('CERTIFICATE'),
      key: pem('PRIVATE KEY'),
    });
    assert.equal(parseTlsSecret('s', good).key, pem('PRIVATE KEY'));
    const bad = JSON.stringify({ ca: pem('CERTIFICATE'), cert: 'SECRETDATA', key: 7 });
    assert.throws(
      () => parseTlsSecret('engine-tls', bad),
      (err: unknown) =>
        err instanceof EngineTlsError &&
        err.message === 'secret engine-tls: cert, key must be PEM strings' &&
        !err.message.includes('SECRETDATA'),
    );
    assert.throws(() => parseTlsSecret('engine-tls', 'SECRETDATA'), /not a JSON object/);
  });
});

describe('docker provider pod support', () => {
  const pod = (spec: Partial<NonNullable<V1Pod['spec']>>): V1Pod => ({
    metadata: { namespace: 'n', name: 'p', uid: 'u' },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }], ...spec },
  });
  const refusals = (p: V1Pod) => unsupportedFields(p, 'cluster.local');

  it('accepts what the API server adds to every pod: the service-account token volume and its mount, defaults', () => {
    const withToken = pod({
      dnsPolicy: 'ClusterFirst',
      enableServiceLinks: true,
      volumes: [{ name: 'default-token-abcde', secret: { secretName: 'default-token-abcde' } }],
      containers: [
        {
          name: 'app',
          image: 'busybox:1.36',
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          volumeMounts: [
            {
              name: 'default-token-abcde',
              mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
              readOnly: true,
            },
          ],
        },
      ],
    });
    assert.deepEqual(refusals(withToken), []);
  });

  it('names every field it cannot honour', () => {
    const reasons = refusals(
      pod({
        hostPID: true,
        volumes: [
          { name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'a', path: '../a', mode: 0o1777 }] } },
          { name: 'host', hostPath: { path: '/etc' } },
          { name: 'scratch', emptyDir: { sizeLimit: '1Gi' } },
          {
            name: 'token',
            projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 2 ** 33 } }] },
          },
        ],
        containers: [
          {
            name: 'app',
            image: 'busybox:1.36',
            readinessProbe: { grpc: { port: 9000 } },
            resources: { limits: { 'nvidia.com/gpu': '1', cpu: '1' } },
            securityContext: { capabilities: { add: ['NET_ADMIN'] }, runAsNonRoot: true },
            volumeMounts: [
              { name: 'token', mountPath: '/token' },
              { name: 'scratch', mountPath: '/s', subPathExpr: '/$(HOME)' },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(reasons, [
      'spec.hostPID: pods never share the Docker host PID namespace',
      'spec.volumes[cfg].configMap.items[0].path: must not contain a ".." element: "../a"',
      'spec.volumes[cfg].configMap.items[0].mode: must be a file mode between 0 and 0777 (511), not 1023',
      'spec.volumes[host]: only emptyDir, configMap, secret, downwardAPI and projected volumes are supported, not hostPath',
      'spec.volumes[scratch].emptyDir.sizeLimit: not enforced by the engine',
      'spec.volumes[token].projected.sources[0].serviceAccountToken.expirationSeconds: must be at most 4294967296 (2^32)',
      'spec.containers[app].readinessProbe.grpc: grpc probes are not supported (Kubernetes 1.24+)',
      'spec.containers[app].volumeMounts[scratch].subPathExpr: must be a relative path, not "/$(HOME)"',
      'spec.containers[app].resources.limits: only cpu and memory are enforced, not nvidia.com/gpu',
      'spec.containers[app].securityContext.capabilities.add: added capabilities are refused',
      'spec.containers[app].securityContext.runAsNonRoot: needs runAsUser on this provider',
    ]);
  });

  it('refuses a sidecar (an init container with restartPolicy Always) rather than run it as an init container', () => {
    const reasons = refusals(
      pod({
        initContainers: [
          { name: 'setup', image: 'busybox:1.36' },
          { name: 'proxy', image: 'busybox:1.36', restartPolicy: 'Always' },
        ],
      }),
    );
    assert.deepEqual(reasons, [
      'spec.initContainers[proxy].restartPolicy: sidecar containers (init containers that keep running) are not supported',
    ]);
  });

  it("refuses confinement the engine's defaults do not give, at pod and container level, all at once", () => {
    const reasons = refusals({
      metadata: {
        namespace: 'n',
        name: 'p',
        uid: 'u',
        annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' },
      },
      spec: {
        hostUsers: false,
        runtimeClassName: 'gvisor',
        securityContext: {
          seccompProfile: { type: 'Unconfined' },
          appArmorProfile: { type: 'RuntimeDefault' },
        },
        containers: [
          {
            name: 'app',
            image: 'busybox:1.36',
            securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'tight' } },
          },
        ],
      },
    });
    assert.deepEqual(reasons, [
      'spec.securityContext.seccompProfile: only RuntimeDefault is supported',
      'spec.securityContext.appArmorProfile: AppArmor profiles are not set by this provider',
      'metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: AppArmor profiles are not set by this provider',
      'spec.hostUsers: user namespaces are not set up by this provider',
      "spec.runtimeClassName: containers run with the engine's default runtime",
      'spec.containers[app].securityContext.appArmorProfile: AppArmor profiles are not set by this provider',
    ]);
    assert.deepEqual(
      refusals(pod({ hostUsers: true, securityContext: { seccompProfile: { type: 'RuntimeDefault' } } })),
      [],
    );
  });

  it('takes runAsGroup only with a runAsUser, from the pod or the container', () => {
    const reasons = refusals(
      pod({
        securityContext: { runAsGroup: 2000 },
        containers: [
          { name: 'app', image: 'busybox:1.36' },
          { name: 'side', image: 'busybox:1.36', securityContext: { runAsUser: 1000 } },
        ],
      }),
    );
    assert.deepEqual(reasons, [
      'spec.containers[app].securityContext.runAsGroup: needs runAsUser on this provider',
    ]);
  });

  it("runs a StatefulSet's pod (a subdomain, setHostnameAsFQDN) and refuses an FQDN too long to be its hostname, naming the field", () => {
    assert.deepEqual(refusals(pod({ hostname: 'web-0', subdomain: 'web', setHostnameAsFQDN: true })), []);
    assert.deepEqual(refusals(pod({ hostname: 'web-0', subdomain: 'web' })), []);
    const long = pod({
      hostname: 'replica-0',
      subdomain: 'a-rather-long-headless-service',
      setHostnameAsFQDN: true,
    });
    assert.deepEqual(unsupportedFields(long, 'cluster.local'), [], 'a 61-character FQDN');
    assert.deepEqual(unsupportedFields(long, 'cluster.example.com'), [
      'spec.setHostnameAsFQDN: the FQDN replica-0.a-rather-long-headless-service.n.svc.cluster.example.com is 66 characters, and a hostname holds at most 64 (the kubelet refuses it too)',
    ]);
    // Without setHostnameAsFQDN the hostname stays short, whatever the FQDN's length.
    assert.deepEqual(
      unsupportedFields(
        { ...long, spec: { ...long.spec, containers: [], setHostnameAsFQDN: false } },
        'cluster.example.com',
      ),
      [],
    );
  });

  it('plans the hostname from hostnameOverride before hostname and the pod name, and the domain of a subdomain', () => {
    const identity = { namespace: 'n', name: 'p', uid: 'u', node: 'vk' };
    const plan = (spec: Partial<NonNullable<V1Pod['spec']>>) => {
      const { hostname, domainname } = podPlan(pod(spec), identity, 'cluster.local');
      return { hostname, domainname };
    };
    assert.deepEqual(plan({ hostname: 'h', hostnameOverride: 'box-1' }), {
      hostname: 'box-1',
      domainname: undefined,
    });
    assert.deepEqual(plan({ hostname: 'h' }), { hostname: 'h', domainname: undefined });
    assert.deepEqual(plan({}), { hostname: 'p', domainname: undefined });
    assert.deepEqual(plan({ hostname: 'web-0', subdomain: 'web' }), {
      hostname: 'web-0',
      domainname: 'web.n.svc.cluster.local',
    });
    assert.deepEqual(plan({ hostname: 'web-0', subdomain: 'web', setHostnameAsFQDN: true }), {
      hostname: 'web-0.web.n.svc.cluster.local',
      domainname: undefined,
    });
  });

  it('refuses pod-level resources, resource claims, a non-Linux os, Strict supplemental groups and a stop signal', () => {
    const reasons = refusals(
      pod({
        os: { name: 'windows' },
        resources: { limits: { cpu: '1' } },
        resourceClaims: [{ name: 'gpu', resourceClaimName: 'gpu-claim' }],
        securityContext: {
          supplementalGroups: [3000],
          supplementalGroupsPolicy: 'Strict',
          windowsOptions: { runAsUserName: 'ContainerUser' },
        },
        containers: [
          {
            name: 'app',
            image: 'busybox:1.36',
            lifecycle: { stopSignal: 'SIGUSR1' },
            resources: { claims: [{ name: 'gpu' }] },
          },
        ],
      }),
    );
    assert.deepEqual(reasons, [
      "spec.securityContext.supplementalGroupsPolicy: Strict is not supported: the engine adds the groups of the image's /etc/group (Merge)",
      'spec.securityContext.windowsOptions: not supported',
      'spec.os.name: windows is not supported: containers run on a Linux engine',
      'spec.resources: pod-level resources are not enforced; set them per container',
      'spec.resourceClaims: dynamic resource allocation is not supported',
      'spec.containers[app].lifecycle.stopSignal: containers are stopped with SIGTERM by this provider',
      'spec.containers[app].resources.claims: dynamic resource allocation is not supported',
    ]);
    assert.deepEqual(
      refusals(
        pod({
          os: { name: 'linux' },
          securityContext: { supplementalGroups: [3000], supplementalGroupsPolicy: 'Merge' },
        }),
      ),
      [],
    );
  });

  it('defaults the pull policy as the API server does', () => {
    assert.equal(pullPolicy(undefined, 'busybox'), 'Always');
    assert.equal(pullPolicy(undefined, 'busybox:latest'), 'Always');
    assert.equal(pullPolicy(undefined, 'registry:5000/team/app:1.2'), 'IfNotPresent');
    assert.equal(pullPolicy(undefined, 'registry:5000/team/app'), 'Always');
    assert.equal(pullPolicy('Never', 'busybox'), 'Never');
  });
});

describe('docker provider registry credentials', () => {
  const config = (auths: Record<string, unknown>) => ({ '.dockerconfigjson': JSON.stringify({ auths }) });

  it('finds the registry of an image as Docker normalises it', () => {
    assert.equal(imageRegistry('busybox:1.36'), 'docker.io');
    assert.equal(imageRegistry('team/app:1'), 'docker.io');
    assert.equal(
      imageRegistry('123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:1'),
      '123456789012.dkr.ecr.eu-west-1.amazonaws.com',
    );
    assert.equal(imageRegistry('localhost:5000/app'), 'localhost:5000');
  });

  it('takes the matching entry of a dockerconfigjson, decoding auth', () => {
    const data = config({
      'https://index.docker.io/v1/': { auth: Buffer.from('hub-user:hub-pass').toString('base64') },
      'registry.example.com': { username: 'u', password: 'p' },
    });
    assert.deepEqual(findAuth(data, 'docker.io'), {
      username: 'hub-user',
      password: 'hub-pass',
      serveraddress: 'docker.io',
    });
    assert.deepEqual(findAuth(data, 'registry.example.com'), {
      username: 'u',
      password: 'p',
      serveraddress: 'registry.example.com',
    });
    assert.equal(findAuth(data, 'other.example.com'), undefined);
  });

  it('scopes pulls by the namespace and imagePullSecrets whose credentials they use', () => {
    assert.equal(pullScope({ namespace: 'a', imagePullSecrets: [] }), '');
    assert.equal(pullScope({ namespace: 'b', imagePullSecrets: [] }), '', 'no credentials: one scope');
    assert.equal(pullScope({ namespace: 'a', imagePullSecrets: ['x', 'y'] }), 'a/x,y');
    assert.notEqual(
      pullScope({ namespace: 'b', imagePullSecrets: ['x', 'y'] }),
      'a/x,y',
      'a Secret of the same name in another namespace is another Secret',
    );
    assert.notEqual(
      pullScope({ namespace: 'a', imagePullSecrets: ['y', 'x'] }),
      'a/x,y',
      'the first Secret with an entry for the registry is used',
    );
  });
});
