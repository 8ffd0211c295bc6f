import type { SimContainer, SimTask } from './sim-types.ts';

/** A task as the ECS API returns it (AWS JSON 1.1 on the wire: timestamps in epoch seconds). */
export function taskJson(
  task: SimTask,
  withTags: boolean,
  region: string,
  account: string,
): Record<string, unknown> {
  const s = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);
  return drop({
    taskArn: task.arn,
    clusterArn: task.clusterArn,
    taskDefinitionArn: task.taskDefinitionArn,
    group: task.group,
    startedBy: task.startedBy,
    version: task.version,
    lastStatus: task.lastStatus,
    desiredStatus: task.desiredStatus,
    launchType: 'FARGATE',
    capacityProviderName: task.capacityProvider,
    platformVersion: '1.4.0',
    cpu: task.cpu,
    memory: task.memory,
    stopCode: task.stopCode,
    stoppedReason: task.stoppedReason,
    createdAt: s(task.createdAt),
    pullStartedAt: s(task.pullStartedAt),
    pullStoppedAt: s(task.pullStoppedAt),
    startedAt: s(task.startedAt),
    stoppingAt: s(task.stoppingAt),
    stoppedAt: s(task.stoppedAt),
    attachments: [eniAttachment(task, 'ElasticNetworkInterface')],
    containers: task.containers.map((c) => containerJson(task, c, region, account)),
    overrides: task.overrides,
    ...(withTags ? { tags: task.tags } : {}),
  });
}

/** The "ECS Task State Change" event ECS puts on the default bus for the task as it is now. */
export function taskEvent(
  task: SimTask,
  at: number,
  region: string,
  account: string,
  id: string,
): Record<string, unknown> {
  const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  return {
    version: '0',
    id,
    'detail-type': 'ECS Task State Change',
    source: 'aws.ecs',
    account,
    time: new Date(at).toISOString(),
    region,
    resources: [task.arn],
    detail: drop({
      attachments: [eniAttachment(task, 'eni')],
      availabilityZone: `${region}a`,
      clusterArn: task.clusterArn,
      containers: task.containers.map((c) => containerJson(task, c, region, account)),
      cpu: task.cpu,
      memory: task.memory,
      createdAt: iso(task.createdAt),
      desiredStatus: task.desiredStatus,
      group: task.group,
      launchType: 'FARGATE',
      lastStatus: task.lastStatus,
      overrides: task.overrides,
      platformVersion: '1.4.0',
      pullStartedAt: iso(task.pullStartedAt),
      pullStoppedAt: iso(task.pullStoppedAt),
      startedAt: iso(task.startedAt),
      startedBy: task.startedBy,
      stopCode: task.stopCode,
      stoppedReason: task.stoppedReason,
      stoppingAt: iso(task.stoppingAt),
      stoppedAt: iso(task.stoppedAt),
      taskArn: task.arn,
      taskDefinitionArn: task.taskDefinitionArn,
      updatedAt: iso(at),
      version: task.version,
    }),
  };
}

function eniAttachment(task: SimTask, type: string): Record<string, unknown> {
  const attached = task.lastStatus !== 'PROVISIONING';
  return {
    id: `attachment-${task.id}`,
    type,
    status: attached ? (task.lastStatus === 'STOPPED' ? 'DELETED' : 'ATTACHED') : 'PRECREATED',
    details: [
      { name: 'subnetId', value: task.subnet },
      ...(attached
        ? [
            { name: 'networkInterfaceId', value: task.eniId },
            { name: 'privateIPv4Address', value: task.podIp },
          ]
        : []),
    ],
  };
}

function containerJson(
  task: SimTask,
  c: SimContainer,
  region: string,
  account: string,
): Record<string, unknown> {
  return drop({
    containerArn: `arn:aws:ecs:${region}:${account}:container/${task.id}/${c.runtimeId}`,
    taskArn: task.arn,
    name: c.name,
    image: c.image,
    lastStatus: c.lastStatus,
    exitCode: c.exitCode,
    reason: c.reason,
    runtimeId: c.startedAt !== undefined ? `${task.id}-${c.runtimeId}` : undefined,
    networkInterfaces:
      task.lastStatus !== 'PROVISIONING'
        ? [{ attachmentId: `attachment-${task.id}`, privateIpv4Address: task.podIp }]
        : [],
  });
}

function drop(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
