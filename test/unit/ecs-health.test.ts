import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { decideEcsPod } from '../../lib/provider/ecs/ecs-pod-progress.ts';
import type { EcsPodRecord } from '../../lib/provider/ecs/ecs-pod-record.ts';
import { ecsPodStatus } from '../../lib/provider/ecs/ecs-pod-status.ts';
import { observed } from '../../lib/provider/ecs/ecs-pod-transitions.ts';
import { healthMapping, healthProblems } from '../../lib/provider/ecs/health-checks.ts';
import { shellBehaviour } from '../support/ecs-sim/shell-behaviour.ts';
import { healthStatus } from '../support/ecs-sim/sim-health.ts';
import type { SimContainer } from '../support/ecs-sim/sim-types.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const ARN = 'arn:aws:ecs:eu-west-1:123456789012:task/pods/aaa';
const at = 'spec.containers[app]';
const exec = (command: string[], over = {}) => ({ exec: { command }, periodSeconds: 10, ...over });

function container(over: Partial<V1Container>): V1Container {
  return { name: 'app', image: 'busybox', ...over };
}

function record(
  healthStatus: string | undefined,
  health = { readiness: true, liveness: true },
): EcsPodRecord {
  return {
    namespace: 'shop',
    name: 'web',
    uid: 'uid-1',
    node: 'vk-1',
    restartPolicy: 'Always',
    initContainers: [],
    containers: [{ name: 'app', image: 'busybox', health }],
    gracePeriodSeconds: 30,
    family: 'svk-x',
    taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/svk-x:1',
    run: { containerOverrides: [] },
    secretParameters: [],
    createdAt: T0,
    restarts: 0,
    current: {
      seq: 0,
      requestedAt: T0,
      arn: ARN,
      snapshot: {
        arn: ARN,
        version: 5,
        lastStatus: 'RUNNING',
        desiredStatus: 'RUNNING',
        containers: [
          { name: 'app', lastStatus: 'RUNNING', startedAt: T0, ...(healthStatus ? { healthStatus } : {}) },
        ],
      },
    },
    observedAt: T0,
    creates: 1,
    deletes: 0,
    version: 1,
  };
}

describe('probes on Fargate', () => {
  it('map an exec liveness and readiness probe to the container health check, raising a 1 s timeout to 2', () => {
    const probe = exec(['pg_isready', '-h', '$(HOST)'], { failureThreshold: 4, initialDelaySeconds: 20 });
    const c = container({
      env: [{ name: 'HOST', value: 'localhost' }],
      readinessProbe: probe,
      livenessProbe: probe,
    });
    assert.deepEqual(healthProblems(at, 'containers', c), []);
    assert.deepEqual(healthMapping(c), {
      check: {
        command: ['CMD', 'pg_isready', '-h', 'localhost'],
        interval: 10,
        timeout: 2,
        retries: 4,
        startPeriod: 20,
      },
      health: { readiness: true, liveness: true },
    });
  });

  it('refuse by name what a health check cannot be', () => {
    assert.deepEqual(
      healthProblems(
        at,
        'containers',
        container({
          readinessProbe: { httpGet: { path: '/', port: 80 } },
          livenessProbe: exec(['true'], { periodSeconds: 1, failureThreshold: 20 }),
          startupProbe: exec(['true']),
          lifecycle: { preStop: { exec: { command: ['sleep', '5'] } } },
        }),
      ),
      [
        'spec.containers[app].startupProbe: an ECS health check has no startup stage',
        'spec.containers[app].lifecycle.preStop: ECS runs no lifecycle hooks',
        'spec.containers[app].readinessProbe: an ECS health check runs a command: only exec probes run on Fargate',
        "spec.containers[app].livenessProbe.periodSeconds: an ECS health check's interval is 5-300 s, not 1",
        'spec.containers[app].livenessProbe.failureThreshold: an ECS health check retries at most 10 times, not 20',
        'spec.containers[app].readinessProbe: a Fargate container has one health check: readiness and liveness must be the same exec probe',
      ],
    );
    assert.deepEqual(healthProblems(at, 'containers', container({ readinessProbe: { grpc: { port: 1 } } })), [
      'spec.containers[app].readinessProbe.grpc: grpc probes are not supported (Kubernetes 1.24+)',
    ]);
  });

  it('make a container ready while ECS says HEALTHY, and describe such a pod on every look', () => {
    assert.equal(ecsPodStatus(record('UNKNOWN')).containerStatuses?.[0]?.ready, false);
    assert.equal(ecsPodStatus(record('HEALTHY')).containerStatuses?.[0]?.ready, true);
    assert.equal(
      ecsPodStatus(record(undefined, { readiness: false, liveness: true })).containerStatuses?.[0]?.ready,
      true,
    );
    assert.deepEqual(decideEcsPod(record('HEALTHY'), T0 + 1, 60_000), { kind: 'refresh', arn: ARN });
  });

  it('date Ready from when DescribeTasks first read the readiness check HEALTHY, not from the start', () => {
    const unknown = record('UNKNOWN', { readiness: true, liveness: false });
    const snapshot = unknown.current.snapshot;
    assert.ok(snapshot);
    const read = {
      ...snapshot,
      containers: [{ name: 'app', lastStatus: 'RUNNING', healthStatus: 'HEALTHY' }],
    };
    const next = observed(unknown, read, T0 + 15_400);
    assert.ok(next, 'the health changes the record though the version did not');
    const status = ecsPodStatus({ ...next, version: 2 });
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');
    assert.equal(
      ready?.lastTransitionTime?.getTime(),
      T0 + 15_000,
      'whole seconds, as the API server keeps them',
    );
    assert.equal(
      observed({ ...next, version: 2 }, read, T0 + 30_000),
      undefined,
      'the same status read again changes nothing, its time included',
    );
  });

  it('stop the task when a liveness health check turns UNHEALTHY, read from DescribeTasks without a new version', () => {
    const healthy = record('HEALTHY');
    const read = {
      ...healthy.current.snapshot,
      arn: ARN,
      version: 5,
      lastStatus: 'RUNNING',
      containers: [{ name: 'app', lastStatus: 'RUNNING', healthStatus: 'UNHEALTHY' }],
    };
    const next = observed(healthy, read, T0 + 5_000);
    assert.ok(next, 'the health changes the record though the version did not');
    assert.deepEqual(decideEcsPod({ ...next, version: 2 }, T0 + 5_000, 60_000), {
      kind: 'stop',
      arn: ARN,
      liveness: 'app',
    });
    assert.equal(
      decideEcsPod(record('UNHEALTHY', { readiness: true, liveness: false }), T0 + 1, 60_000).kind,
      'refresh',
      'a readiness check alone never stops the task',
    );
  });
});

describe("the ECS simulation's health checks (test/support/ecs-sim)", () => {
  const simContainer = (script: string, command: string[]): SimContainer => ({
    name: 'app',
    image: 'busybox',
    essential: true,
    after: [],
    stopTimeoutSeconds: 30,
    run: shellBehaviour(['sh', '-c', script], {}),
    healthCheck: { command: ['CMD', ...command], interval: 5, timeout: 5, retries: 3, startPeriod: 0 },
    env: {},
    lastStatus: 'RUNNING',
    runtimeId: 'r',
    startedAt: T0,
  });

  it("see the files the conformance harness's container script touches and removes", () => {
    const ready = simContainer('sleep 12; touch /tmp/ready; sleep 3600', ['test', '-e', '/tmp/ready']);
    assert.equal(healthStatus(ready, T0 + 10_000), 'UNKNOWN', 'two failures of three: not yet unhealthy');
    assert.equal(healthStatus(ready, T0 + 15_000), 'HEALTHY', 'the file is there from 12 s');
    const alive = simContainer('touch /tmp/alive; sleep 7; rm /tmp/alive; sleep 3600', [
      'test',
      '-e',
      '/tmp/alive',
    ]);
    assert.equal(healthStatus(alive, T0 + 5_000), 'HEALTHY');
    assert.equal(
      healthStatus(alive, T0 + 20_000),
      'UNHEALTHY',
      'removed at 7 s: failures at 10, 15 and 20 s',
    );
  });
});
