import * as z from 'zod';
import type { EcsPodAdvancer } from './ecs-pod-advance.ts';
import type { EcsPodRecord } from './ecs-pod-record.ts';
import type { EcsPodStore } from './ecs-pod-store.ts';
import { observed } from './ecs-pod-transitions.ts';
import { parseTaskGroup } from './run-task-input.ts';
import { compact, eniAddress, type TaskSnapshot } from './task-snapshot.ts';

/**
 * "ECS Task State Change" events, as ECS puts them on the account's default
 * EventBridge bus (ECS Developer Guide, "Amazon ECS task state change
 * events"): at least once, in no particular order, possibly before RunTask
 * has returned. Times are ISO strings; `detail.version` counts the task's
 * state changes (the envelope's `version` is always "0"); ECS may add
 * fields, so unknown ones are accepted and ignored.
 */

/** The event's `source` and `detail-type`, which the rule for our cluster matches. */
export const TASK_STATE_SOURCE = 'aws.ecs';
export const TASK_STATE_DETAIL_TYPE = 'ECS Task State Change';

const time = z.iso.datetime({ offset: true }).optional();

const detailSchema = z.looseObject({
  taskArn: z.string().regex(/^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:task\/.+$/, 'must be an ECS task ARN'),
  clusterArn: z.string().regex(/^arn:aws[a-z-]*:ecs:/, 'must be an ECS cluster ARN'),
  version: z.number().int().nonnegative(),
  lastStatus: z.string().min(1),
  desiredStatus: z.string().optional(),
  group: z.string().optional(),
  startedBy: z.string().optional(),
  stopCode: z.string().optional(),
  stoppedReason: z.string().optional(),
  createdAt: time,
  pullStartedAt: time,
  pullStoppedAt: time,
  startedAt: time,
  stoppingAt: time,
  stoppedAt: time,
  updatedAt: time,
  attachments: z
    .array(
      z.looseObject({
        type: z.string().optional(),
        details: z
          .array(z.looseObject({ name: z.string().optional(), value: z.string().optional() }))
          .optional(),
      }),
    )
    .optional(),
  containers: z
    .array(
      z.looseObject({
        name: z.string(),
        lastStatus: z.string().optional(),
        exitCode: z.number().int().optional(),
        reason: z.string().optional(),
        runtimeId: z.string().optional(),
        imageDigest: z.string().optional(),
      }),
    )
    .default([]),
});

const eventSchema = z.looseObject({
  source: z.literal(TASK_STATE_SOURCE),
  'detail-type': z.literal(TASK_STATE_DETAIL_TYPE),
  detail: detailSchema,
});

export type TaskStateDetail = z.infer<typeof detailSchema>;

/** An event that is not a well-formed ECS Task State Change; nothing is written for it. */
export class InvalidTaskStateEventError extends Error {
  override readonly name = 'InvalidTaskStateEventError';
}

/**
 * The event's detail.
 * @throws InvalidTaskStateEventError naming every bad field.
 */
export function parseTaskStateEvent(event: unknown): TaskStateDetail {
  const parsed = eventSchema.safeParse(event);
  if (parsed.success) return parsed.data.detail;
  const fields = parsed.error.issues.map((i) => `${i.path.join('.') || '(event)'}: ${i.message}`);
  throw new InvalidTaskStateEventError(`not an ECS Task State Change event: ${fields.join('; ')}`);
}

export function snapshotFromEvent(detail: TaskStateDetail): TaskSnapshot {
  const ms = (t: string | undefined) => (t ? Date.parse(t) : undefined);
  return compact({
    arn: detail.taskArn,
    version: detail.version,
    lastStatus: detail.lastStatus,
    desiredStatus: detail.desiredStatus,
    stopCode: detail.stopCode,
    stoppedReason: detail.stoppedReason,
    createdAt: ms(detail.createdAt),
    pullStartedAt: ms(detail.pullStartedAt),
    pullStoppedAt: ms(detail.pullStoppedAt),
    startedAt: ms(detail.startedAt),
    stoppingAt: ms(detail.stoppingAt),
    stoppedAt: ms(detail.stoppedAt),
    updatedAt: ms(detail.updatedAt),
    podIp: eniAddress(detail.attachments),
    containers: detail.containers.map((c) =>
      compact({
        name: c.name,
        lastStatus: c.lastStatus,
        exitCode: c.exitCode,
        reason: c.reason,
        runtimeId: c.runtimeId,
        imageDigest: c.imageDigest,
      }),
    ),
  });
}

/** What applying one event did. */
export type TaskStateOutcome =
  /** The event's state was newer than ours: the pod's record took it (and the pod moved on). */
  | { outcome: 'applied'; record: EcsPodRecord }
  /** We already had this state or a newer one (a duplicate, or an event that arrived late). */
  | { outcome: 'stale'; record: EcsPodRecord }
  /** Not a task of ours (its group is not one we give), or of a pod we no longer hold. */
  | { outcome: 'ignored'; reason: string };

/** Applies an event to the pod whose task it is, then advances the pod (a stopped task may restart at once). */
export async function applyTaskStateEvent(
  parts: { store: EcsPodStore; advancer: EcsPodAdvancer },
  detail: TaskStateDetail,
  now: number,
  signal?: AbortSignal,
): Promise<TaskStateOutcome> {
  const ids = parseTaskGroup(detail.group);
  if (!ids) return { outcome: 'ignored', reason: `group ${detail.group ?? '(none)'} is not one of ours` };
  const record = await parts.store.getByUid(ids.uid);
  if (!record || record.goneAt !== undefined)
    return { outcome: 'ignored', reason: `pod uid ${ids.uid} is not held` };
  const snapshot = snapshotFromEvent(detail);
  if (!observed(record, snapshot, now, ids.seq)) {
    const advanced = await parts.advancer.advance(record, signal);
    return { outcome: 'stale', record: advanced ?? record };
  }
  const written = await parts.advancer.write(record, (r) => observed(r, snapshot, now, ids.seq), signal);
  if (!written) return { outcome: 'ignored', reason: `pod uid ${ids.uid} was replaced` };
  return { outcome: 'applied', record: written };
}
