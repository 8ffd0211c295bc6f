import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../lib/config/config.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { parseEcsSettings } from '../../lib/provider/ecs/settings.ts';

const REQUIRED = {
  SVK_ECS_CLUSTER: 'pods',
  SVK_ECS_SUBNETS: 'subnet-0123456789abcdef0, subnet-0fedcba9876543210',
  SVK_ECS_EXECUTION_ROLE_ARN: 'arn:aws:iam::123456789012:role/svk-task-execution',
  SVK_ECS_LOG_GROUP: '/svk/prod/pods',
};

describe('ECS provider settings', () => {
  it('reads the required variables and fills in the defaults', () => {
    assert.deepEqual(parseEcsSettings(REQUIRED), {
      ok: true,
      settings: {
        cluster: 'pods',
        subnets: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
        securityGroups: [],
        assignPublicIp: false,
        executionRoleArn: 'arn:aws:iam::123456789012:role/svk-task-execution',
        logGroup: '/svk/prod/pods',
        platformVersion: 'LATEST',
        capacityProvider: 'FARGATE',
        cpuArchitecture: 'X86_64',
        familyPrefix: 'serverless-virtual-kubelet',
        secretsPath: '/serverless-virtual-kubelet/pod-secrets',
        overrideAllowlist: [],
        registryCredentials: {},
        volumeImage: 'public.ecr.aws/docker/library/busybox:1.36.1',
        statusPollMs: 60_000,
      },
    });
  });

  it('names every bad variable at once', () => {
    const result = parseEcsSettings({
      SVK_ECS_CLUSTER: 'arn:aws:ecs:eu-west-1:123456789012:cluster/pods',
      SVK_ECS_SUBNETS: 'subnet-1,sg-0123456789abcdef0',
      SVK_ECS_CAPACITY_PROVIDER: 'EC2',
      SVK_ECS_OVERRIDE_ALLOWLIST: '[{"namespace":"Payments","taskRoleArns":["role/x"]}]',
      SVK_ECS_REGISTRY_CREDENTIALS: 'registry.example.com=not-an-arn',
      SVK_ECS_STATUS_POLL_SECONDS: '1',
      SVK_ECS_VOLUME_IMAGE: 'busy box',
    });
    assert.equal(result.ok, false);
    const variables = result.ok ? [] : result.issues.map((i) => i.variable);
    assert.deepEqual([...new Set(variables)].sort(), [
      'SVK_ECS_CAPACITY_PROVIDER',
      'SVK_ECS_CLUSTER',
      'SVK_ECS_EXECUTION_ROLE_ARN',
      'SVK_ECS_LOG_GROUP',
      'SVK_ECS_OVERRIDE_ALLOWLIST',
      'SVK_ECS_REGISTRY_CREDENTIALS',
      'SVK_ECS_STATUS_POLL_SECONDS',
      'SVK_ECS_SUBNETS',
      'SVK_ECS_VOLUME_IMAGE',
    ]);
    const allowlist = result.ok
      ? []
      : result.issues.filter((i) => i.variable === 'SVK_ECS_OVERRIDE_ALLOWLIST');
    assert.deepEqual(
      allowlist.map((i) => i.message),
      ['[0.namespace] must be a namespace name', '[0.taskRoleArns.0] must be IAM role ARNs'],
    );
  });

  it('is part of the configuration when SVK_PROVIDER=ecs-fargate, with the provider taint', () => {
    const config = loadConfig({ SVK_PROVIDER: 'ecs-fargate', ...REQUIRED });
    assert.equal(config.provider.name, 'ecs-fargate');
    assert.deepEqual(config.node.taints, [
      { key: 'virtual-kubelet.io/provider', value: 'ecs-fargate', effect: 'NoSchedule' },
    ]);
    assert.throws(
      () => loadConfig({ SVK_PROVIDER: 'ecs-fargate', SVK_NODE_CAPACITY: 'cpu=4' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        ['SVK_ECS_CLUSTER', 'SVK_ECS_SUBNETS', 'SVK_NODE_CAPACITY'].every((v) => err.message.includes(v)),
    );
  });
});
