import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod, V1Service } from '@kubernetes/client-node';
import { expandEnv } from '../../lib/kube/env-expansion.ts';
import { parseQuantity } from '../../lib/kube/quantity.ts';
import { fieldValue } from '../../lib/pod/env/downward-api.ts';
import { EnvResolveError } from '../../lib/pod/env/env-reasons.ts';
import type { EnvSources } from '../../lib/pod/env/env-sources.ts';
import { isEnvVarName, resolvePodEnv } from '../../lib/pod/env/pod-env.ts';

/** ConfigMaps and Secrets as plain objects; `broken` names fail to read. */
function sources(
  configMaps: Record<string, Record<string, string>>,
  secrets: Record<string, Record<string, string>> = {},
  broken: string[] = [],
  services: V1Service[] = [],
): EnvSources & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    services: async (ns, name) => {
      reads.push(`services:${ns}${name === undefined ? '' : `/${name}`}`);
      if (broken.includes(`services:${ns}`)) throw new Error('connection refused');
      return services.filter(
        (s) => s.metadata?.namespace === ns && (name === undefined || s.metadata?.name === name),
      );
    },
    configMap: async (ns, name) => {
      reads.push(`cm:${ns}/${name}`);
      if (broken.includes(name)) throw new Error('connection refused');
      return configMaps[name];
    },
    secret: async (ns, name) => {
      reads.push(`secret:${ns}/${name}`);
      if (broken.includes(name)) throw new Error('connection refused');
      return secrets[name];
    },
  };
}

function pod(container: Partial<V1Container>, extra: Partial<V1Pod> = {}): V1Pod {
  return {
    metadata: {
      namespace: 'ns',
      name: 'web-1',
      uid: 'uid-1',
      labels: { app: 'web' },
      annotations: { team: 'a' },
    },
    spec: {
      nodeName: 'vk-1',
      serviceAccountName: 'sa',
      containers: [{ name: 'c', image: 'nginx', ...container }],
    },
    status: { podIP: '10.1.2.3' },
    ...extra,
  };
}

function envOf(resolved: V1Pod, index = 0): Record<string, string | undefined> {
  return Object.fromEntries(
    (resolved.spec?.containers[index]?.env ?? []).map(
      (e) => [e.name, e.value] as [string, string | undefined],
    ),
  );
}

describe('env resolution', () => {
  it('resolves ConfigMap and Secret keys, envFrom with prefix, and overrides envFrom with env', async () => {
    const input = pod({
      envFrom: [{ configMapRef: { name: 'cfg' } }, { secretRef: { name: 'sec' }, prefix: 'S_' }],
      env: [
        { name: 'MODE', value: 'override' },
        { name: 'KEY', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
        { name: 'PASS', valueFrom: { secretKeyRef: { name: 'sec', key: 'password' } } },
      ],
    });
    const src = sources({ cfg: { MODE: 'fromcm', OTHER: 'x' } }, { sec: { password: 'hunter2' } });
    const { pod: resolved, warnings } = await resolvePodEnv(input, src);
    assert.deepEqual(envOf(resolved), {
      MODE: 'override',
      OTHER: 'x',
      S_password: 'hunter2',
      KEY: 'fromcm',
      PASS: 'hunter2',
    });
    assert.equal(resolved.spec?.containers[0]?.envFrom, undefined);
    assert.deepEqual(warnings, []);
    // Each object read once per resolution.
    assert.deepEqual(src.reads, ['services:ns', 'services:default/kubernetes', 'cm:ns/cfg', 'secret:ns/sec']);
    // The input is left alone.
    assert.equal(input.spec?.containers[0]?.envFrom?.length, 2);
  });

  it('resolves the downward API', async () => {
    const input = pod({
      env: [
        { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'TEAM', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['team']" } } },
        { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
        { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
      ],
    });
    const { pod: resolved } = await resolvePodEnv(input, sources({}), { hostIp: '192.168.0.9' });
    assert.deepEqual(envOf(resolved), {
      NAME: 'web-1',
      NS: 'ns',
      UID: 'uid-1',
      APP: 'web',
      TEAM: 'a',
      NODE: 'vk-1',
      SA: 'sa',
      POD_IP: '10.1.2.3',
      HOST_IP: '192.168.0.9',
    });
    assert.equal(fieldValue(input, 'metadata.labels'), 'app="web"');
    assert.throws(() => fieldValue(input, 'spec.schedulerName'), EnvResolveError);
  });

  it('resolves resourceFieldRef with divisors, and node allocatable for a missing limit', async () => {
    const input = pod({
      resources: { limits: { cpu: '1500m', memory: '1Gi' }, requests: { cpu: '250m' } },
      env: [
        { name: 'CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
        { name: 'CPU_REQ_M', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
        { name: 'MEM_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
        {
          name: 'STORAGE',
          valueFrom: { resourceFieldRef: { resource: 'limits.ephemeral-storage', divisor: '1Gi' } },
        },
        { name: 'MEM_REQ', valueFrom: { resourceFieldRef: { resource: 'requests.memory' } } },
        // The API server stores a missing divisor as 0; the kubelet divides by 1.
        { name: 'MEM_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '0' } } },
      ],
    });
    const { pod: resolved } = await resolvePodEnv(input, sources({}), {
      allocatable: { 'ephemeral-storage': '100Gi' },
    });
    assert.deepEqual(envOf(resolved), {
      CPU_LIMIT: '2',
      CPU_REQ_M: '250',
      MEM_MI: '1024',
      STORAGE: '100',
      MEM_REQ: '0',
      MEM_LIMIT: '1073741824',
    });
    assert.deepEqual(parseQuantity('0.1'), { num: 1n, den: 10n });
    assert.deepEqual(parseQuantity('1e3'), { num: 1000n, den: 1n });
    assert.equal(parseQuantity('lots'), undefined);
  });

  it('expands $(VAR) like Kubernetes', async () => {
    const lookup = (n: string) => ({ A: 'x', B: 'y' })[n];
    assert.equal(expandEnv('$(A)-$(B)', lookup), 'x-y');
    assert.equal(expandEnv('$(MISSING)', lookup), '$(MISSING)');
    assert.equal(expandEnv('$$(A)', lookup), '$(A)');
    assert.equal(expandEnv('cost $5 $(A', lookup), 'cost $5 $(A');
    assert.equal(expandEnv('end$', lookup), 'end$');
    const { pod: resolved } = await resolvePodEnv(
      pod({
        env: [
          { name: 'BASE', value: '/srv' },
          { name: 'PATH_X', value: '$(BASE)/bin:$(LATER)' },
          { name: 'LATER', value: 'late' },
          { name: 'EMPTY', value: '' },
        ],
      }),
      sources({}),
    );
    assert.deepEqual(envOf(resolved), {
      BASE: '/srv',
      PATH_X: '/srv/bin:$(LATER)',
      LATER: 'late',
      EMPTY: '',
    });
  });

  it('skips optional references with warnings, and invalid envFrom keys', async () => {
    const { pod: resolved, warnings } = await resolvePodEnv(
      pod({
        envFrom: [{ configMapRef: { name: 'gone', optional: true } }, { configMapRef: { name: 'cfg' } }],
        env: [
          { name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'nokey', optional: true } } },
          { name: 'B', valueFrom: { secretKeyRef: { name: 'nosecret', key: 'k', optional: true } } },
        ],
      }),
      sources({ cfg: { 'good.key': '1', '1bad': '2' } }),
    );
    assert.deepEqual(envOf(resolved), { 'good.key': '1' });
    assert.deepEqual(
      warnings.map((w) => w.reason),
      [
        'OptionalConfigMapNotFound',
        'InvalidEnvironmentVariableNames',
        'OptionalConfigMapKeyNotFound',
        'OptionalSecretNotFound',
      ],
    );
    assert.match(warnings[1]?.message ?? '', /keys \[1bad\] from configmap ns\/cfg were skipped/);
  });

  it('fails on a missing mandatory ConfigMap, key or Secret, naming it', async () => {
    const cases: Array<[Partial<V1Container>, string, RegExp]> = [
      [
        { envFrom: [{ configMapRef: { name: 'app-config' } }] },
        'MandatoryConfigMapNotFound',
        /configmap "app-config" not found/,
      ],
      [
        { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'missing' } } }] },
        'MandatoryConfigMapKeyNotFound',
        /configmap "cfg" doesn't contain the "missing" key required by pod web-1/,
      ],
      [
        { env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }] },
        'MandatorySecretNotFound',
        /secret "db" not found/,
      ],
      [
        { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'flaky', key: 'k' } } }] },
        'FailedToReadMandatoryConfigMap',
        /failed to read configmap "flaky": connection refused/,
      ],
    ];
    for (const [container, reason, message] of cases) {
      await assert.rejects(
        resolvePodEnv(pod(container), sources({ cfg: {} }, {}, ['flaky'])),
        (err: unknown) => {
          assert.ok(err instanceof EnvResolveError);
          assert.equal(err.reason, reason);
          assert.match(err.message, message);
          return true;
        },
      );
    }
  });

  it('resolves init containers too', async () => {
    const input = pod({ env: [{ name: 'A', value: '1' }] });
    if (input.spec)
      input.spec.initContainers = [{ name: 'init', envFrom: [{ configMapRef: { name: 'cfg' } }] }];
    const { pod: resolved } = await resolvePodEnv(input, sources({ cfg: { K: 'v' } }));
    assert.deepEqual(resolved.spec?.initContainers?.[0]?.env, [
      { name: 'K', value: 'v', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'K' } } },
    ]);
  });

  it('keeps where each value came from beside it, and a literal expanded from a Secret is a Secret value', async () => {
    const input = pod({
      envFrom: [{ secretRef: { name: 'sec' }, prefix: 'S_' }],
      env: [
        { name: 'PASS', valueFrom: { secretKeyRef: { name: 'sec', key: 'password' } } },
        { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'PLAIN', value: 'x' },
        { name: 'URL', value: 'db://$(NAME):$(PASS)@host' },
        { name: 'GREETING', value: 'hello $(NAME)' },
        { name: 'ECHO', value: '$(PLAIN)-y' },
      ],
    });
    const { pod: resolved } = await resolvePodEnv(input, sources({}, { sec: { password: 'hunter2' } }));
    const passRef = { secretKeyRef: { name: 'sec', key: 'password' } };
    assert.deepEqual(resolved.spec?.containers[0]?.env, [
      { name: 'S_password', value: 'hunter2', valueFrom: passRef },
      { name: 'PASS', value: 'hunter2', valueFrom: passRef },
      { name: 'NAME', value: 'web-1', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'PLAIN', value: 'x' },
      { name: 'URL', value: 'db://web-1:hunter2@host', valueFrom: passRef },
      { name: 'GREETING', value: 'hello web-1', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'ECHO', value: 'x-y' },
    ]);
  });

  it('knows valid variable names', () => {
    assert.ok(isEnvVarName('A_b.c-1'));
    assert.ok(!isEnvVarName('1A'));
    assert.ok(!isEnvVarName('A B'));
    assert.ok(!isEnvVarName(''));
  });
});

/** The Services of a small cluster, as the API server lists them. */
const SERVICES: V1Service[] = [
  {
    metadata: { namespace: 'default', name: 'kubernetes' },
    spec: { clusterIP: '10.0.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
  },
  {
    metadata: { namespace: 'ns', name: 'fooservice' },
    spec: { clusterIP: '10.0.0.17', ports: [{ port: 8765, protocol: 'TCP' }] },
  },
  {
    metadata: { namespace: 'ns', name: 'redis-master' },
    spec: {
      clusterIP: '10.0.0.11',
      ports: [
        { name: 'client', port: 6379, protocol: 'TCP' },
        { name: 'metrics', port: 9121, protocol: 'UDP' },
      ],
    },
  },
  // Headless and ExternalName Services have no cluster IP: no variables.
  { metadata: { namespace: 'ns', name: 'headless' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } },
  {
    metadata: { namespace: 'ns', name: 'external' },
    spec: { type: 'ExternalName', externalName: 'example.com' },
  },
  {
    metadata: { namespace: 'other', name: 'elsewhere' },
    spec: { clusterIP: '10.0.0.99', ports: [{ port: 80 }] },
  },
];

describe('service links (enableServiceLinks)', () => {
  it('gives every container the variables of each Service of its namespace and of kubernetes, as the kubelet names them', async () => {
    const input = pod({ env: [{ name: 'OWN', value: 'x' }] });
    const { pod: resolved } = await resolvePodEnv(input, sources({}, {}, [], SERVICES));
    assert.deepEqual(envOf(resolved), {
      OWN: 'x',
      // The e2e spec "Pods should contain environment variables for services" checks these six.
      FOOSERVICE_SERVICE_HOST: '10.0.0.17',
      FOOSERVICE_SERVICE_PORT: '8765',
      FOOSERVICE_PORT: 'tcp://10.0.0.17:8765',
      FOOSERVICE_PORT_8765_TCP: 'tcp://10.0.0.17:8765',
      FOOSERVICE_PORT_8765_TCP_PROTO: 'tcp',
      FOOSERVICE_PORT_8765_TCP_PORT: '8765',
      FOOSERVICE_PORT_8765_TCP_ADDR: '10.0.0.17',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      KUBERNETES_SERVICE_PORT_HTTPS: '443',
      KUBERNETES_PORT: 'tcp://10.0.0.1:443',
      KUBERNETES_PORT_443_TCP: 'tcp://10.0.0.1:443',
      KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
      KUBERNETES_PORT_443_TCP_PORT: '443',
      KUBERNETES_PORT_443_TCP_ADDR: '10.0.0.1',
      REDIS_MASTER_SERVICE_HOST: '10.0.0.11',
      REDIS_MASTER_SERVICE_PORT: '6379',
      REDIS_MASTER_SERVICE_PORT_CLIENT: '6379',
      REDIS_MASTER_SERVICE_PORT_METRICS: '9121',
      REDIS_MASTER_PORT: 'tcp://10.0.0.11:6379',
      REDIS_MASTER_PORT_6379_TCP: 'tcp://10.0.0.11:6379',
      REDIS_MASTER_PORT_6379_TCP_PROTO: 'tcp',
      REDIS_MASTER_PORT_6379_TCP_PORT: '6379',
      REDIS_MASTER_PORT_6379_TCP_ADDR: '10.0.0.11',
      REDIS_MASTER_PORT_9121_UDP: 'udp://10.0.0.11:9121',
      REDIS_MASTER_PORT_9121_UDP_PROTO: 'udp',
      REDIS_MASTER_PORT_9121_UDP_PORT: '9121',
      REDIS_MASTER_PORT_9121_UDP_ADDR: '10.0.0.11',
    });
    // The container's own variables first, then the links, Services by name: a stable pod for the provider.
    const names = (resolved.spec?.containers[0]?.env ?? []).map((e) => e.name);
    assert.deepEqual(names.slice(0, 3), ['OWN', 'FOOSERVICE_SERVICE_HOST', 'FOOSERVICE_SERVICE_PORT']);
  });

  it("lets the container's own variables win, and expands $(VAR) in env from the links", async () => {
    const input = pod({
      env: [
        { name: 'FOOSERVICE_SERVICE_HOST', value: 'mine' },
        { name: 'API', value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' },
        { name: 'FOO', value: '$(FOOSERVICE_SERVICE_HOST)' },
      ],
    });
    const { pod: resolved } = await resolvePodEnv(input, sources({}, {}, [], SERVICES));
    const env = envOf(resolved);
    assert.equal(env.FOOSERVICE_SERVICE_HOST, 'mine');
    assert.equal(env.API, 'https://10.0.0.1:443');
    assert.equal(env.FOO, 'mine');
    assert.equal(
      resolved.spec?.containers[0]?.env?.filter((e) => e.name === 'FOOSERVICE_SERVICE_HOST').length,
      1,
    );
  });

  it('with enableServiceLinks false, only kubernetes; a Service of the namespace named kubernetes wins', async () => {
    const src = sources({}, {}, [], SERVICES);
    const { pod: off } = await resolvePodEnv(
      pod({}, { spec: { enableServiceLinks: false, containers: [{ name: 'app' }] } }),
      src,
    );
    assert.deepEqual(
      Object.keys(envOf(off)).filter((k) => !k.startsWith('KUBERNETES_')),
      [],
    );
    assert.equal(envOf(off).KUBERNETES_SERVICE_HOST, '10.0.0.1');
    assert.deepEqual(src.reads, ['services:default/kubernetes']);

    const shadow: V1Service = {
      metadata: { namespace: 'ns', name: 'kubernetes' },
      spec: { clusterIP: '10.0.0.50', ports: [{ port: 80 }] },
    };
    const { pod: shadowed } = await resolvePodEnv(pod({}), sources({}, {}, [], [...SERVICES, shadow]));
    assert.equal(envOf(shadowed).KUBERNETES_SERVICE_HOST, '10.0.0.50');
    assert.equal(envOf(shadowed).KUBERNETES_SERVICE_PORT_HTTPS, undefined);
  });

  it('reads the default namespace once for a pod that lives there', async () => {
    const src = sources({}, {}, [], SERVICES);
    const input = pod({});
    input.metadata = { ...input.metadata, namespace: 'default' };
    const { pod: resolved } = await resolvePodEnv(input, src);
    assert.equal(envOf(resolved).KUBERNETES_SERVICE_HOST, '10.0.0.1');
    assert.deepEqual(src.reads, ['services:default']);
  });

  it('fails the resolution (the pod stays Pending) when the Services cannot be listed', async () => {
    await assert.rejects(
      resolvePodEnv(pod({}), sources({}, {}, ['services:ns'], SERVICES)),
      (err: unknown) =>
        err instanceof EnvResolveError &&
        err.reason === 'CreateContainerConfigError' &&
        /failed to list services when setting up env vars: connection refused/.test(err.message),
    );
  });
});
