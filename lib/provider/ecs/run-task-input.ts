import { createHash } from 'node:crypto';
import type { RunTaskCommandInput, Tag } from '@aws-sdk/client-ecs';
import type { EcsPodRecord } from './ecs-pod-record.ts';
import type { CapacityProvider } from './settings.ts';

/**
 * How a pod's task is started and recognised again: its RunTask request and
 * the marks every one of its tasks carries.
 *
 * - `clientToken`: the pod uid for its first task, `<uid>-<seq>` for the
 *   following ones (restarts, a launch retried after ECS started nothing):
 *   a repeated RunTask (a retried create, a crash between RunTask and the
 *   record write) returns the task it started instead of a second one.
 * - `startedBy` (at most 36 characters): `svk-` and a hash of the family
 *   prefix and the node, so ListTasks finds exactly one node's tasks of this
 *   deployment (the dangling-task pass).
 * - `group`: `svk:<uid>:<seq>`. Task-state events carry startedBy and group
 *   but no tags, so this is how an event finds its pod and task.
 * - tags: the pod's uid, namespace, name and node, for people and for
 *   tasks found without a record.
 */

export const TAG_UID = 'serverless-virtual-kubelet.io/pod-uid';
export const TAG_NAMESPACE = 'serverless-virtual-kubelet.io/pod-namespace';
export const TAG_NAME = 'serverless-virtual-kubelet.io/pod-name';
export const TAG_NODE = 'serverless-virtual-kubelet.io/node';

export function clientToken(uid: string, seq: number): string {
  return seq === 0 ? uid : `${uid}-${seq}`;
}

export function taskGroup(uid: string, seq: number): string {
  return `svk:${uid}:${seq}`;
}

/** The pod uid and task sequence number a group names, or undefined when it is not one of ours. */
export function parseTaskGroup(group: string | undefined): { uid: string; seq: number } | undefined {
  const m = /^svk:([0-9a-fA-F-]{1,64}):(\d{1,9})$/.exec(group ?? '');
  return m?.[1] && m[2] ? { uid: m[1], seq: Number(m[2]) } : undefined;
}

/** The startedBy of every task this deployment starts for `node` (36 characters). */
export function nodeStartedBy(familyPrefix: string, node: string): string {
  return `svk-${createHash('sha256').update(`${familyPrefix}\n${node}`).digest('hex').slice(0, 32)}`;
}

/** What RunTask needs from the configuration. */
export interface RunSettings {
  familyPrefix: string;
  subnets: readonly string[];
  securityGroups: readonly string[];
  assignPublicIp: boolean;
  platformVersion: string;
  capacityProvider: CapacityProvider;
}

/** The RunTask request (without cluster and count) for the pod's task number `seq`. */
export function runTaskInput(
  record: EcsPodRecord,
  seq: number,
  settings: RunSettings,
): Omit<RunTaskCommandInput, 'cluster' | 'count'> {
  const { run } = record;
  const capacityProvider =
    run.spot === undefined ? settings.capacityProvider : run.spot ? 'FARGATE_SPOT' : 'FARGATE';
  const securityGroups = run.securityGroups ?? settings.securityGroups;
  const overrides = {
    ...(run.containerOverrides.length > 0 ? { containerOverrides: run.containerOverrides } : {}),
    ...(run.taskRoleArn ? { taskRoleArn: run.taskRoleArn } : {}),
  };
  return {
    taskDefinition: record.taskDefinitionArn,
    clientToken: clientToken(record.uid, seq),
    startedBy: nodeStartedBy(settings.familyPrefix, record.node),
    group: taskGroup(record.uid, seq),
    capacityProviderStrategy: [{ capacityProvider, weight: 1 }],
    platformVersion: settings.platformVersion,
    networkConfiguration: {
      awsvpcConfiguration: {
        subnets: [...(run.subnets ?? settings.subnets)],
        ...(securityGroups.length > 0 ? { securityGroups: [...securityGroups] } : {}),
        assignPublicIp: settings.assignPublicIp ? 'ENABLED' : 'DISABLED',
      },
    },
    ...(Object.keys(overrides).length > 0 ? { overrides } : {}),
    tags: podTags(record),
  };
}

export function podTags(pod: { uid: string; namespace: string; name: string; node: string }): Tag[] {
  return [
    { key: TAG_UID, value: pod.uid },
    { key: TAG_NAMESPACE, value: pod.namespace },
    { key: TAG_NAME, value: pod.name },
    { key: TAG_NODE, value: pod.node },
  ];
}
