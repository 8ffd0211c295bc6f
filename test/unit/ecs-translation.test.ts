import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import type { EcsPodRecord } from '../../lib/provider/ecs/ecs-pod-record.ts';
import type { SecretValue } from '../../lib/provider/ecs/env-partition.ts';
import { type OverrideRule, podOverrides } from '../../lib/provider/ecs/override-allowlist.ts';
import { runTaskInput } from '../../lib/provider/ecs/run-task-input.ts';
import {
  definitionHash,
  isTaskTranslationError,
  type TaskTranslation,
  TaskTranslationError,
  type TranslationSettings,
  translatePod as translate,
} from '../../lib/provider/ecs/task-translation.ts';
import { ApiModel } from '../support/ecs-sim/api-model.ts';
import {
  dependencyProblems,
  runTaskProblems,
  taskDefinitionProblems,
} from '../support/ecs-sim/sim-checks.ts';

const ECS_MODEL = ApiModel.load('ecs-2014-11-13');

/** Translates, and checks the definition against ECS's published model and Fargate's documented rules. */
function translatePod(pod: V1Pod, s: TranslationSettings): TaskTranslation {
  const t = translate(pod, s);
  const body = JSON.parse(JSON.stringify({ ...t.definition, family: t.family }));
  assert.deepEqual(
    ECS_MODEL.validate('RegisterTaskDefinition', body),
    [],
    'RegisterTaskDefinition fits the API model',
  );
  assert.deepEqual([...taskDefinitionProblems(body), ...dependencyProblems(body)], [], "and Fargate's rules");
  return t;
}

/**
 * Realistic pods, as the API server hands them to a kubelet (defaults filled
 * in, the ServiceAccount token volume added), into the exact task definition
 * and RunTask request, or the exact refusal.
 */

const EXECUTION_ROLE = 'arn:aws:iam::123456789012:role/svk-task-execution';
const TASK_ROLE = 'arn:aws:iam::123456789012:role/svk-pods';

const settings: TranslationSettings = {
  familyPrefix: 'svk-prod',
  executionRoleArn: EXECUTION_ROLE,
  taskRoleArn: TASK_ROLE,
  logGroup: '/svk/prod/pods',
  region: 'eu-west-1',
  cpuArchitecture: 'X86_64',
  registryCredentials: {
    'registry.example.com': 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:pull-AbCdEf',
  },
  secretParameterName: (v: SecretValue) =>
    `/svk/prod/pod-secrets/${v.namespace}/${v.secret}/${v.key}/mac-of-${v.value.length}`,
  volumeImage: 'public.ecr.aws/docker/library/busybox:1.36.1',
};

const TOKEN_MOUNT = {
  name: 'kube-api-access-x7k2p',
  mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
  readOnly: true,
};
const TOKEN_VOLUME = {
  name: 'kube-api-access-x7k2p',
  projected: {
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
      { configMap: { name: 'kube-root-ca.crt' } },
    ],
  },
};

/** A pod as the API server stores it: defaults filled in, the token volume mounted into every container. */
function apiPod(
  name: string,
  spec: { containers: V1Container[]; initContainers?: V1Container[] } & Partial<NonNullable<V1Pod['spec']>>,
  meta: Partial<NonNullable<V1Pod['metadata']>> = {},
): V1Pod {
  const withDefaults = (c: V1Container): V1Container => ({
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
    ...c,
    volumeMounts: [...(c.volumeMounts ?? []), TOKEN_MOUNT],
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      namespace: 'shop',
      name,
      uid: `00000000-0000-4000-8000-${name.padStart(12, '0').slice(-12)}`,
      ...meta,
    },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      schedulerName: 'default-scheduler',
      enableServiceLinks: true,
      priority: 0,
      securityContext: {},
      nodeName: 'vk-1',
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      ...spec,
      volumes: [...(spec.volumes ?? []), TOKEN_VOLUME],
      containers: spec.containers.map(withDefaults),
      ...(spec.initContainers ? { initContainers: spec.initContainers.map(withDefaults) } : {}),
    },
  };
}

const logs = (namespace: string) => ({
  logDriver: 'awslogs' as const,
  options: {
    'awslogs-group': '/svk/prod/pods',
    'awslogs-region': 'eu-west-1',
    'awslogs-stream-prefix': namespace,
  },
});

const taskLevel = (cpu: string, memory: string) => ({
  requiresCompatibilities: ['FARGATE' as const],
  networkMode: 'awsvpc' as const,
  cpu,
  memory,
  runtimePlatform: { operatingSystemFamily: 'LINUX' as const, cpuArchitecture: 'X86_64' as const },
  executionRoleArn: EXECUTION_ROLE,
  taskRoleArn: TASK_ROLE,
});

describe('pod → Fargate task', () => {
  it('an nginx Deployment pod: one essential container, ports, requests and limits, the token volume left out', () => {
    const pod = apiPod(
      'web-7d4b9c-x2x8q',
      {
        containers: [
          {
            name: 'nginx',
            image: 'nginx:1.27',
            ports: [{ containerPort: 80, protocol: 'TCP', name: 'http' }],
            resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
          },
        ],
      },
      { labels: { app: 'web', 'pod-template-hash': '7d4b9c' } },
    );
    const t = translatePod(pod, settings);
    assert.deepEqual(t.definition, {
      ...taskLevel('256', '512'),
      containerDefinitions: [
        {
          name: 'nginx',
          image: 'nginx:1.27',
          essential: true,
          portMappings: [{ containerPort: 80, hostPort: 80, protocol: 'tcp' }],
          cpu: 256,
          memoryReservation: 256,
          memory: 512,
          stopTimeout: 30,
          logConfiguration: logs('shop'),
        },
      ],
    });
    assert.equal(t.family, `svk-prod-${definitionHash(t.definition)}`);
    assert.deepEqual(t.secrets, []);
    assert.deepEqual(t.containerOverrides, []);
    // Another replica of the same Deployment: the same definition, so one registration for all.
    const replica = apiPod('web-7d4b9c-p9q4z', { containers: [pod.spec?.containers[0] as V1Container] });
    assert.equal(translatePod(replica, settings).family, t.family);
  });

  it('a Job pod: command and args become entryPoint and command, env in the definition, downward API in the overrides', () => {
    const pod = apiPod('report-2026-01-01-abcde', {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 300,
      containers: [
        {
          name: 'report',
          image: 'registry.example.com/reports/builder:4.2',
          command: ['/bin/report'],
          args: ['--month', '2026-01'],
          workingDir: '/work',
          env: [
            { name: 'MODE', value: 'monthly' },
            {
              name: 'COLOR',
              value: 'blue',
              valueFrom: { configMapKeyRef: { name: 'settings', key: 'color' } },
            },
            {
              name: 'POD_NAME',
              value: 'report-2026-01-01-abcde',
              valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
            },
          ],
          resources: { requests: { cpu: '1', memory: '3Gi' } },
        },
      ],
    });
    const t = translatePod(pod, settings);
    assert.deepEqual(t.definition, {
      ...taskLevel('1024', '3072'),
      containerDefinitions: [
        {
          name: 'report',
          image: 'registry.example.com/reports/builder:4.2',
          essential: true,
          entryPoint: ['/bin/report'],
          command: ['--month', '2026-01'],
          workingDirectory: '/work',
          environment: [
            { name: 'MODE', value: 'monthly' },
            { name: 'COLOR', value: 'blue' },
          ],
          cpu: 1024,
          memoryReservation: 3072,
          stopTimeout: 120,
          repositoryCredentials: {
            credentialsParameter: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:pull-AbCdEf',
          },
          logConfiguration: logs('shop'),
        },
      ],
    });
    assert.deepEqual(t.containerOverrides, [
      { name: 'report', environment: [{ name: 'POD_NAME', value: 'report-2026-01-01-abcde' }] },
    ]);
  });

  it('init containers run in order before the app container and its sidecar, sharing an emptyDir', () => {
    const mount = [{ name: 'work', mountPath: '/work' }];
    const pod = apiPod('api-0', {
      volumes: [{ name: 'work', emptyDir: {} }],
      initContainers: [
        {
          name: 'migrate',
          image: 'shop/api:2.1',
          command: ['sh', '-c', 'migrate up'],
          volumeMounts: mount,
          resources: { limits: { cpu: '2', memory: '4Gi' } },
        },
        { name: 'warm', image: 'shop/api:2.1', command: ['sh', '-c', 'warm-cache'], volumeMounts: mount },
      ],
      containers: [
        {
          name: 'api',
          image: 'shop/api:2.1',
          volumeMounts: mount,
          resources: { requests: { cpu: '500m', memory: '1Gi' } },
        },
        {
          name: 'proxy',
          image: 'envoyproxy/envoy:v1.31',
          ports: [{ containerPort: 9901, protocol: 'UDP' }],
          resources: { requests: { cpu: '250m', memory: '256Mi' } },
        },
      ],
    });
    const t = translatePod(pod, settings);
    // The largest init container (2 vCPU, 4 GiB) outweighs the app containers together (0.75 vCPU, 1.25 GiB).
    assert.deepEqual(t.definition, {
      ...taskLevel('2048', '4096'),
      containerDefinitions: [
        {
          name: 'migrate',
          image: 'shop/api:2.1',
          essential: false,
          entryPoint: ['sh', '-c', 'migrate up'],
          mountPoints: [{ sourceVolume: 'work', containerPath: '/work', readOnly: false }],
          stopTimeout: 30,
          logConfiguration: logs('shop'),
        },
        {
          name: 'warm',
          image: 'shop/api:2.1',
          essential: false,
          entryPoint: ['sh', '-c', 'warm-cache'],
          mountPoints: [{ sourceVolume: 'work', containerPath: '/work', readOnly: false }],
          dependsOn: [{ containerName: 'migrate', condition: 'SUCCESS' }],
          stopTimeout: 30,
          logConfiguration: logs('shop'),
        },
        {
          name: 'api',
          image: 'shop/api:2.1',
          essential: true,
          mountPoints: [{ sourceVolume: 'work', containerPath: '/work', readOnly: false }],
          dependsOn: [{ containerName: 'warm', condition: 'SUCCESS' }],
          cpu: 512,
          memoryReservation: 1024,
          stopTimeout: 30,
          logConfiguration: logs('shop'),
        },
        {
          name: 'proxy',
          image: 'envoyproxy/envoy:v1.31',
          essential: true,
          portMappings: [{ containerPort: 9901, hostPort: 9901, protocol: 'udp' }],
          dependsOn: [{ containerName: 'warm', condition: 'SUCCESS' }],
          cpu: 256,
          memoryReservation: 256,
          stopTimeout: 30,
          logConfiguration: logs('shop'),
        },
      ],
      volumes: [{ name: 'work' }],
    });
  });

  it('env from a Secret goes to SSM: the definition names a parameter, the value is nowhere in it', () => {
    const pod = apiPod('checkout-6c9f-kq2lm', {
      containers: [
        {
          name: 'app',
          image: 'shop/checkout:3',
          env: [
            {
              name: 'DB_PASSWORD',
              value: 'hunter2-very-secret',
              valueFrom: { secretKeyRef: { name: 'db', key: 'password' } },
            },
            {
              name: 'DB_URL',
              value: 'postgres://app:hunter2-very-secret@db',
              valueFrom: { secretKeyRef: { name: 'db', key: 'password' } },
            },
          ],
        },
      ],
    });
    const t = translatePod(pod, settings);
    assert.deepEqual(t.definition.containerDefinitions?.[0]?.secrets, [
      { name: 'DB_PASSWORD', valueFrom: '/svk/prod/pod-secrets/shop/db/password/mac-of-19' },
      { name: 'DB_URL', valueFrom: '/svk/prod/pod-secrets/shop/db/password/mac-of-37' },
    ]);
    assert.equal(t.definition.containerDefinitions?.[0]?.environment, undefined);
    assert.deepEqual(
      t.secrets.map((s) => [s.parameter, s.value.value]),
      [
        ['/svk/prod/pod-secrets/shop/db/password/mac-of-19', 'hunter2-very-secret'],
        ['/svk/prod/pod-secrets/shop/db/password/mac-of-37', 'postgres://app:hunter2-very-secret@db'],
      ],
    );
    assert.ok(!JSON.stringify(t.definition).includes('hunter2'), 'no Secret value in the task definition');
    assert.ok(!JSON.stringify(t.containerOverrides).includes('hunter2'), 'no Secret value in the overrides');
  });

  it('$(VAR) in command and args is expanded as the kubelet does; a pod field makes the definition its own', () => {
    const env = [
      { name: 'GREETING', value: 'hello' },
      { name: 'POD_NAME', value: 'report-7', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ];
    const pod = apiPod('report-7', {
      containers: [
        {
          name: 'app',
          image: 'busybox',
          command: ['sh', '-c', 'echo "$(GREETING) $$(GREETING)"'],
          args: ['--name=$(POD_NAME)', '$(UNKNOWN)'],
          env,
        },
      ],
    });
    const t = translatePod(pod, settings);
    const c = t.definition.containerDefinitions?.[0];
    assert.deepEqual(c?.entryPoint, ['sh', '-c', 'echo "hello $(GREETING)"']);
    assert.deepEqual(c?.command, ['--name=report-7', '$(UNKNOWN)']);
    const other = apiPod('report-8', {
      containers: [
        {
          ...(pod.spec?.containers[0] as V1Container),
          env: [env[0] as V1EnvVar, { ...(env[1] as V1EnvVar), value: 'report-8' }],
        },
      ],
    });
    assert.notEqual(
      translatePod(other, settings).family,
      t.family,
      "the pod's own name is in its definition",
    );
  });

  it("a command or args word that would carry a Secret's value is refused, naming the word", () => {
    const pod = apiPod('login-1', {
      containers: [
        {
          name: 'app',
          image: 'shop/login:1',
          command: ['login'],
          args: ['--user=app', '--password=$(DB_PASSWORD)', '--url=$(DB_URL)'],
          env: [
            {
              name: 'DB_PASSWORD',
              value: 'hunter2-very-secret',
              valueFrom: { secretKeyRef: { name: 'db', key: 'password' } },
            },
            {
              // A literal that expanded the Secret carries its reference (pod-env.ts).
              name: 'DB_URL',
              value: 'postgres://app:hunter2-very-secret@db',
              valueFrom: { secretKeyRef: { name: 'db', key: 'password' } },
            },
          ],
        },
      ],
    });
    assert.throws(
      () => translatePod(pod, settings),
      (err: unknown) => {
        assert.ok(err instanceof TaskTranslationError);
        assert.deepEqual(err.reasons, [
          `spec.containers[app].args[1]: $(DB_PASSWORD) expands a Secret's value, which would be written into the task definition (read "$DB_PASSWORD" from the environment in a shell instead)`,
          `spec.containers[app].args[2]: $(DB_URL) expands a Secret's value, which would be written into the task definition (read "$DB_URL" from the environment in a shell instead)`,
        ]);
        assert.ok(!err.message.includes('hunter2'), 'the refusal names no Secret value');
        return true;
      },
    );
  });

  it('a pod larger than Fargate allows is refused, naming the limit', () => {
    const pod = apiPod('train-0', {
      containers: [
        { name: 'gpu-less', image: 'ml/train:1', resources: { requests: { cpu: '16', memory: '128Gi' } } },
      ],
    });
    assert.throws(
      () => translatePod(pod, settings),
      (err: unknown) => {
        assert.ok(isTaskTranslationError(err));
        assert.deepEqual(err.reasons, [
          "the pod needs 16384 CPU units and 131072 MiB, more than Fargate's largest task (16384 CPU units = 16 vCPU, 122880 MiB = 120 GiB)",
        ]);
        return true;
      },
    );
  });

  it('a pod with a hostPath volume, a privileged container and a probe is refused with every reason', () => {
    const pod = apiPod('node-exporter-abcde', {
      hostNetwork: true,
      volumes: [{ name: 'proc', hostPath: { path: '/proc' } }],
      containers: [
        {
          name: 'exporter',
          image: 'prom/node-exporter:v1.8',
          volumeMounts: [{ name: 'proc', mountPath: '/host/proc', readOnly: true }],
          securityContext: { privileged: true },
          livenessProbe: { httpGet: { path: '/', port: 9100 } },
        },
      ],
    });
    assert.throws(
      () => translatePod(pod, settings),
      (err: unknown) => {
        assert.ok(isTaskTranslationError(err));
        assert.deepEqual(err.reasons, [
          'spec.hostNetwork: a Fargate task has its own network interface, never a host network',
          'spec.volumes[proc]: only emptyDir, configMap, secret, downwardAPI and projected volumes are supported on Fargate, not hostPath',
          'spec.containers[exporter].livenessProbe: an ECS health check runs a command: only exec probes run on Fargate',
          'spec.containers[exporter].securityContext.privileged: Fargate does not run privileged containers',
        ]);
        return true;
      },
    );
  });

  it('a sidecar, AppArmor profiles and hostUsers: false are refused rather than dropped', () => {
    const pod = apiPod(
      'web-abcde',
      {
        hostUsers: false,
        securityContext: { appArmorProfile: { type: 'RuntimeDefault' } },
        initContainers: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.31', restartPolicy: 'Always' }],
        containers: [
          {
            name: 'web',
            image: 'nginx:1.27',
            securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'tight' } },
          },
        ],
      },
      { annotations: { 'container.apparmor.security.beta.kubernetes.io/web': 'runtime/default' } },
    );
    assert.throws(
      () => translatePod(pod, settings),
      (err: unknown) => {
        assert.ok(isTaskTranslationError(err));
        assert.deepEqual(err.reasons, [
          'spec.hostUsers: a Fargate task cannot run in a user namespace of its own',
          'spec.securityContext.appArmorProfile: a Fargate task takes no AppArmor profile',
          'metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: a Fargate task takes no AppArmor profile',
          'spec.initContainers[proxy].restartPolicy: sidecar containers (init containers that keep running) are not supported',
          'spec.containers[web].securityContext.appArmorProfile: a Fargate task takes no AppArmor profile',
        ]);
        return true;
      },
    );
  });

  it('a subdomain, a hostnameOverride, a non-Linux os, pod-level resources, resource claims, Strict groups and a stop signal are refused', () => {
    const pod = apiPod('db-0', {
      subdomain: 'db',
      hostnameOverride: 'box',
      os: { name: 'windows' },
      resources: { limits: { cpu: '1' } },
      resourceClaims: [{ name: 'gpu', resourceClaimName: 'gpu-claim' }],
      securityContext: { supplementalGroupsPolicy: 'Strict' },
      containers: [
        {
          name: 'db',
          image: 'postgres:17',
          lifecycle: { stopSignal: 'SIGINT' },
          resources: { claims: [{ name: 'gpu' }] },
        },
      ],
    });
    assert.throws(
      () => translatePod(pod, settings),
      (err: unknown) => {
        assert.ok(isTaskTranslationError(err));
        assert.deepEqual(err.reasons, [
          'spec.hostnameOverride: a Fargate task cannot set its hostname',
          'spec.subdomain: a Fargate task cannot set its hostname or domain',
          'spec.os.name: windows is not supported: Linux tasks only',
          'spec.resources: pod-level resources are not supported; set them per container',
          'spec.resourceClaims: dynamic resource allocation is not supported',
          'spec.securityContext.supplementalGroupsPolicy: Strict is not supported',
          "spec.containers[db].lifecycle.stopSignal: a task definition cannot set a container's stop signal",
          'spec.containers[db].resources.claims: dynamic resource allocation is not supported',
        ]);
        return true;
      },
    );
  });
});

describe('RunTask request', () => {
  it('carries the uid as clientToken and group, the node in startedBy, tags, network and overrides', () => {
    const record = {
      namespace: 'shop',
      name: 'web-1',
      uid: '7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f',
      node: 'vk-1',
      taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/svk-prod-abc:1',
      run: {
        containerOverrides: [{ name: 'app', environment: [{ name: 'POD_NAME', value: 'web-1' }] }],
        taskRoleArn: 'arn:aws:iam::123456789012:role/other',
        spot: true,
      },
    } as unknown as EcsPodRecord;
    const run = {
      familyPrefix: 'svk-prod',
      subnets: ['subnet-0123456789abcdef0'],
      securityGroups: ['sg-0123456789abcdef0'],
      assignPublicIp: false,
      platformVersion: 'LATEST',
      capacityProvider: 'FARGATE' as const,
    };
    const input = runTaskInput(record, 0, run);
    const wire = JSON.parse(JSON.stringify({ ...input, cluster: 'pods', count: 1 }));
    assert.deepEqual(ECS_MODEL.validate('RunTask', wire), []);
    assert.deepEqual(runTaskProblems(wire), []);
    assert.deepEqual(input, {
      taskDefinition: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/svk-prod-abc:1',
      clientToken: '7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f',
      startedBy: input.startedBy,
      group: 'svk:7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f:0',
      capacityProviderStrategy: [{ capacityProvider: 'FARGATE_SPOT', weight: 1 }],
      platformVersion: 'LATEST',
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: ['subnet-0123456789abcdef0'],
          securityGroups: ['sg-0123456789abcdef0'],
          assignPublicIp: 'DISABLED',
        },
      },
      overrides: {
        containerOverrides: [{ name: 'app', environment: [{ name: 'POD_NAME', value: 'web-1' }] }],
        taskRoleArn: 'arn:aws:iam::123456789012:role/other',
      },
      tags: [
        { key: 'serverless-virtual-kubelet.io/pod-uid', value: '7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f' },
        { key: 'serverless-virtual-kubelet.io/pod-namespace', value: 'shop' },
        { key: 'serverless-virtual-kubelet.io/pod-name', value: 'web-1' },
        { key: 'serverless-virtual-kubelet.io/node', value: 'vk-1' },
      ],
    });
    assert.match(input.startedBy ?? '', /^svk-[0-9a-f]{32}$/);
    assert.equal(runTaskInput(record, 3, run).clientToken, '7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f-3');
    assert.equal(
      runTaskInput({ ...record, node: 'vk-2' } as EcsPodRecord, 0, run).startedBy === input.startedBy,
      false,
    );
  });
});

describe('per-pod overrides', () => {
  const rules: OverrideRule[] = [
    {
      namespace: 'payments',
      serviceAccount: 'api',
      taskRoleArns: ['arn:aws:iam::123456789012:role/payments-api'],
      subnets: [],
      securityGroups: ['sg-0aaaaaaaaaaaaaaaa'],
      spot: true,
    },
  ];
  const pod = (namespace: string, sa: string, annotations: Record<string, string>): V1Pod => ({
    metadata: { namespace, name: 'p', annotations },
    spec: { serviceAccountName: sa, containers: [] },
  });

  it('allows what the rule for the namespace and ServiceAccount lists', () => {
    assert.deepEqual(
      podOverrides(
        pod('payments', 'api', {
          'ecs.serverless-virtual-kubelet.io/task-role-arn': 'arn:aws:iam::123456789012:role/payments-api',
          'ecs.serverless-virtual-kubelet.io/spot': 'true',
          'ecs.serverless-virtual-kubelet.io/security-groups': 'sg-0aaaaaaaaaaaaaaaa',
        }),
        rules,
      ),
      {
        ok: true,
        overrides: {
          taskRoleArn: 'arn:aws:iam::123456789012:role/payments-api',
          securityGroups: ['sg-0aaaaaaaaaaaaaaaa'],
          spot: true,
        },
      },
    );
  });

  it('refuses a task role for another ServiceAccount or namespace, an unlisted subnet and unknown annotations', () => {
    const role = {
      'ecs.serverless-virtual-kubelet.io/task-role-arn': 'arn:aws:iam::123456789012:role/payments-api',
    };
    assert.deepEqual(podOverrides(pod('payments', 'batch', role), rules), {
      ok: false,
      reasons: [
        'annotation ecs.serverless-virtual-kubelet.io/task-role-arn: arn:aws:iam::123456789012:role/payments-api is not allowed for namespace payments, ServiceAccount batch',
      ],
    });
    assert.equal(podOverrides(pod('shop', 'api', role), rules).ok, false);
    assert.deepEqual(
      podOverrides(
        pod('payments', 'api', {
          'ecs.serverless-virtual-kubelet.io/subnets': 'subnet-0bbbbbbbbbbbbbbbb',
          'ecs.serverless-virtual-kubelet.io/taskrole': 'x',
        }),
        rules,
      ),
      {
        ok: false,
        reasons: [
          'annotation ecs.serverless-virtual-kubelet.io/taskrole: unknown',
          'annotation ecs.serverless-virtual-kubelet.io/subnets: subnet-0bbbbbbbbbbbbbbbb not allowed for namespace payments, ServiceAccount api',
        ],
      },
    );
  });

  it("requires one rule to grant all of a pod's overrides, not the union of several rules", () => {
    // Two grants to two workloads of one namespace: the batch role on spot, the api role in its security group.
    const split: OverrideRule[] = [
      {
        namespace: 'payments',
        taskRoleArns: ['arn:aws:iam::123456789012:role/payments-batch'],
        subnets: ['subnet-0aaaaaaaaaaaaaaaa'],
        securityGroups: [],
        spot: true,
      },
      {
        namespace: 'payments',
        taskRoleArns: ['arn:aws:iam::123456789012:role/payments-api'],
        subnets: ['subnet-0bbbbbbbbbbbbbbbb'],
        securityGroups: ['sg-0aaaaaaaaaaaaaaaa'],
        spot: false,
      },
    ];
    const apiRoleOnSpot = pod('payments', 'default', {
      'ecs.serverless-virtual-kubelet.io/task-role-arn': 'arn:aws:iam::123456789012:role/payments-api',
      'ecs.serverless-virtual-kubelet.io/spot': 'true',
    });
    assert.deepEqual(podOverrides(apiRoleOnSpot, split), {
      ok: false,
      reasons: [
        'annotations ecs.serverless-virtual-kubelet.io/task-role-arn, ecs.serverless-virtual-kubelet.io/spot: each is allowed for namespace payments, ServiceAccount default by some allowlist rule, but no one rule allows them together',
      ],
    });
    // Within one list too: a subnet of each rule.
    const bothSubnets = pod('payments', 'default', {
      'ecs.serverless-virtual-kubelet.io/subnets': 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
    });
    assert.equal(podOverrides(bothSubnets, split).ok, false);
    // What one rule grants stays granted.
    assert.deepEqual(
      podOverrides(
        pod('payments', 'default', {
          'ecs.serverless-virtual-kubelet.io/task-role-arn': 'arn:aws:iam::123456789012:role/payments-api',
          'ecs.serverless-virtual-kubelet.io/subnets': 'subnet-0bbbbbbbbbbbbbbbb',
          'ecs.serverless-virtual-kubelet.io/security-groups': 'sg-0aaaaaaaaaaaaaaaa',
        }),
        split,
      ),
      {
        ok: true,
        overrides: {
          taskRoleArn: 'arn:aws:iam::123456789012:role/payments-api',
          subnets: ['subnet-0bbbbbbbbbbbbbbbb'],
          securityGroups: ['sg-0aaaaaaaaaaaaaaaa'],
        },
      },
    );
  });
});
