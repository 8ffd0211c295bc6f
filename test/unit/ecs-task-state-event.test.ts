import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  InvalidTaskStateEventError,
  parseTaskStateEvent,
  snapshotFromEvent,
} from '../../lib/provider/ecs/task-state-event.ts';

/** An event as ECS documents it (ECS Developer Guide, "Amazon ECS task state change events"), for a Fargate task. */
const EVENT = {
  version: '0',
  id: '3317b2af-7005-947d-b652-f55e762e571a',
  'detail-type': 'ECS Task State Change',
  source: 'aws.ecs',
  account: '123456789012',
  time: '2026-03-01T10:00:07Z',
  region: 'eu-west-1',
  resources: ['arn:aws:ecs:eu-west-1:123456789012:task/pods/b99d40b3517640f7'],
  detail: {
    attachments: [
      {
        id: '1789bcae-ddfb-4d10-8ebe-8ac87ddba5b8',
        type: 'eni',
        status: 'ATTACHED',
        details: [
          { name: 'subnetId', value: 'subnet-0123456789abcdef0' },
          { name: 'networkInterfaceId', value: 'eni-0a1b2c3d4e5f60718' },
          { name: 'privateIPv4Address', value: '10.0.3.17' },
        ],
      },
    ],
    availabilityZone: 'eu-west-1a',
    clusterArn: 'arn:aws:ecs:eu-west-1:123456789012:cluster/pods',
    containers: [
      {
        containerArn: 'arn:aws:ecs:eu-west-1:123456789012:container/x',
        lastStatus: 'RUNNING',
        name: 'app',
        image: 'nginx:1.27',
        runtimeId: 'b99d40b3517640f7-1234',
        cpu: '0',
      },
    ],
    createdAt: '2026-03-01T10:00:00.123Z',
    launchType: 'FARGATE',
    cpu: '256',
    memory: '512',
    desiredStatus: 'RUNNING',
    group: 'svk:7c2b8a4e-1f0d-4c55-9d1e-2a3b4c5d6e7f:0',
    lastStatus: 'RUNNING',
    overrides: { containerOverrides: [{ name: 'app' }] },
    connectivity: 'CONNECTED',
    startedAt: '2026-03-01T10:00:06.5Z',
    startedBy: 'svk-0123456789abcdef0123456789abcdef',
    updatedAt: '2026-03-01T10:00:07.001Z',
    taskArn: 'arn:aws:ecs:eu-west-1:123456789012:task/pods/b99d40b3517640f7',
    taskDefinitionArn: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/svk-prod-abc:1',
    version: 3,
    platformVersion: '1.4.0',
    aFieldEcsMayAddOneDay: { anything: true },
  },
};

describe('ECS Task State Change events', () => {
  it('reads the task state, the ENI address and the containers, ignoring unknown fields', () => {
    const snapshot = snapshotFromEvent(parseTaskStateEvent(EVENT));
    assert.deepEqual(snapshot, {
      arn: 'arn:aws:ecs:eu-west-1:123456789012:task/pods/b99d40b3517640f7',
      version: 3,
      lastStatus: 'RUNNING',
      desiredStatus: 'RUNNING',
      createdAt: Date.parse('2026-03-01T10:00:00.123Z'),
      startedAt: Date.parse('2026-03-01T10:00:06.5Z'),
      updatedAt: Date.parse('2026-03-01T10:00:07.001Z'),
      podIp: '10.0.3.17',
      containers: [{ name: 'app', lastStatus: 'RUNNING', runtimeId: 'b99d40b3517640f7-1234' }],
    });
  });

  it('refuses what is not a task state change, naming each bad field', () => {
    const bad = {
      ...EVENT,
      source: 'aws.ec2',
      detail: { ...EVENT.detail, version: 'three', taskArn: 'task/1' },
    };
    assert.throws(
      () => parseTaskStateEvent(bad),
      (err: unknown) => {
        assert.ok(err instanceof InvalidTaskStateEventError);
        for (const field of ['source', 'detail.taskArn', 'detail.version'])
          assert.ok(err.message.includes(field), field);
        return true;
      },
    );
  });
});
