import type { ContainerOverride } from '@aws-sdk/client-ecs';
import * as z from 'zod';
import type { ItemKey, StoredItem } from '../../state/dynamodb.ts';
import type { ContainerHealth } from './health-checks.ts';
import type { TaskSnapshot } from './task-snapshot.ts';

/**
 * How the ECS provider remembers a pod, in the state table (Lambda keeps
 * nothing between invocations, and ECS keeps a stopped task for about an
 * hour only):
 *
 * | item | keys | attributes |
 * | --- | --- | --- |
 * | the pod | `ecs#pods#<namespace>` / `<name>`; gsi1 `ecs#node#<node>` / `<namespace>/<name>` while held | {@link EcsPodRecord} |
 * | its uid | `ecs#uid#<uid>` / `pod` | namespace, name: how a task-state event (which names the uid) finds the pod |
 *
 * Keyed by namespace/name like the mock's records, because a new pod with the
 * same name replaces the old one. A pod deleted and stopped stays as a
 * tombstone (out of gsi1, `expiresAt` for DynamoDB's TTL), so a late event or
 * a replayed create of that uid finds it done. Every write is conditional on
 * `version`.
 */

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface ContainerRef {
  name: string;
  image: string;
  /** What its ECS health check stands for (health-checks.ts); absent without one. */
  health?: ContainerHealth;
}

/** One RunTask request of the pod and what became of it. */
export interface TaskRecord {
  /** 0 for the first task (clientToken = the pod uid), then 1, 2...: its clientToken and group carry it. */
  seq: number;
  /** Epoch ms when it was requested. */
  requestedAt: number;
  arn?: string;
  snapshot?: TaskSnapshot;
  /** RunTask answered with failures[] for it (no capacity, ENI limits): no task exists. */
  launchFailure?: string;
  /** We stopped it to replace it with a changed spec: restarted at once whatever the restartPolicy. */
  replaced?: boolean;
}

/** What RunTask needs of the pod besides the task definition. */
export interface RunSpec {
  containerOverrides: ContainerOverride[];
  taskRoleArn?: string;
  subnets?: string[];
  securityGroups?: string[];
  spot?: boolean;
}

export interface EcsPodRecord {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  restartPolicy: RestartPolicy;
  initContainers: ContainerRef[];
  containers: ContainerRef[];
  gracePeriodSeconds: number;
  family: string;
  taskDefinitionArn: string;
  run: RunSpec;
  /** The translation's shape (task-translation.ts): what an update compares; absent in records written before it. */
  shape?: string;
  /** SSM parameters this pod holds a reference on (released when it is deleted). */
  secretParameters: string[];
  /** Epoch ms of the first create. */
  createdAt: number;
  /** How many times the pod was restarted (a new task after one stopped). */
  restarts: number;
  /** The newest task. */
  current: TaskRecord;
  /** The one before it: the containers' lastState. */
  previous?: TaskRecord;
  /** Epoch ms of the last time ECS itself (an event or DescribeTasks) told us about `current`. */
  observedAt: number;
  /** Epoch ms when deletePod asked for the pod's task to stop. */
  deleteRequestedAt?: number;
  /** Epoch ms when the deleted pod's task was seen stopped: a tombstone from then on. */
  goneAt?: number;
  /** createPod calls that started this uid's first task (1 unless a create was lost and replayed as new). */
  creates: number;
  /** deletePod calls that asked this uid's task to stop. */
  deletes: number;
  version: number;
}

export function ecsPodKey(namespace: string, name: string): ItemKey {
  return { pk: `ecs#pods#${namespace}`, sk: name };
}

export function ecsUidKey(uid: string): ItemKey {
  return { pk: `ecs#uid#${uid}`, sk: 'pod' };
}

export function ecsNodePartition(node: string): string {
  return `ecs#node#${node}`;
}

/** A deleted pod's tombstone (and its uid item) stays this long: a day, longer than any retry. */
export const TOMBSTONE_TTL_SECONDS = 24 * 60 * 60;

/** Whether the provider still holds the pod (it is not a tombstone). */
export function isHeld(record: EcsPodRecord): boolean {
  return record.goneAt === undefined;
}

export function toItem(record: EcsPodRecord): StoredItem {
  const held = isHeld(record);
  return {
    ...ecsPodKey(record.namespace, record.name),
    ...(held
      ? { gsi1pk: ecsNodePartition(record.node), gsi1sk: `${record.namespace}/${record.name}` }
      : { expiresAt: Math.ceil((record.goneAt ?? 0) / 1000) + TOMBSTONE_TTL_SECONDS }),
    record: JSON.stringify(record),
    uid: record.uid,
    version: record.version,
  };
}

const snapshotSchema = z.object({
  arn: z.string(),
  version: z.number(),
  lastStatus: z.string(),
  desiredStatus: z.string().optional(),
  stopCode: z.string().optional(),
  stoppedReason: z.string().optional(),
  createdAt: z.number().optional(),
  pullStartedAt: z.number().optional(),
  pullStoppedAt: z.number().optional(),
  startedAt: z.number().optional(),
  stoppingAt: z.number().optional(),
  stoppedAt: z.number().optional(),
  updatedAt: z.number().optional(),
  podIp: z.string().optional(),
  containers: z.array(
    z.object({
      name: z.string(),
      lastStatus: z.string().optional(),
      exitCode: z.number().optional(),
      reason: z.string().optional(),
      runtimeId: z.string().optional(),
      imageDigest: z.string().optional(),
      healthStatus: z.string().optional(),
      healthAt: z.number().optional(),
      startedAt: z.number().optional(),
      finishedAt: z.number().optional(),
    }),
  ),
});

const taskSchema = z.object({
  seq: z.number(),
  requestedAt: z.number(),
  arn: z.string().optional(),
  snapshot: snapshotSchema.optional(),
  launchFailure: z.string().optional(),
  replaced: z.boolean().optional(),
});

const containerSchema = z.object({
  name: z.string(),
  image: z.string(),
  health: z.object({ readiness: z.boolean(), liveness: z.boolean() }).optional(),
});

const recordSchema = z.object({
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  node: z.string(),
  restartPolicy: z.enum(['Always', 'OnFailure', 'Never']),
  initContainers: z.array(containerSchema),
  containers: z.array(containerSchema),
  gracePeriodSeconds: z.number(),
  family: z.string(),
  taskDefinitionArn: z.string(),
  run: z.object({
    containerOverrides: z.array(
      z.object({
        name: z.string(),
        environment: z.array(z.object({ name: z.string(), value: z.string() })).optional(),
      }),
    ),
    taskRoleArn: z.string().optional(),
    subnets: z.array(z.string()).optional(),
    securityGroups: z.array(z.string()).optional(),
    spot: z.boolean().optional(),
  }),
  shape: z.string().optional(),
  secretParameters: z.array(z.string()),
  createdAt: z.number(),
  restarts: z.number(),
  current: taskSchema,
  previous: taskSchema.optional(),
  observedAt: z.number(),
  deleteRequestedAt: z.number().optional(),
  goneAt: z.number().optional(),
  creates: z.number(),
  deletes: z.number(),
  version: z.number(),
});

/**
 * The record an item holds.
 * @throws Error naming the item when it is not an ECS pod record (a write of another version, say).
 */
export function fromItem(item: StoredItem): EcsPodRecord {
  const raw = typeof item.record === 'string' ? safeJson(item.record) : undefined;
  const parsed = recordSchema.safeParse(raw);
  if (!parsed.success)
    throw new Error(`ECS pod record ${item.pk} / ${item.sk} is malformed: ${parsed.error.message}`);
  return parsed.data;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
