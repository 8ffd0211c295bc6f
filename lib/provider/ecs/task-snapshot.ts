import type { Task } from '@aws-sdk/client-ecs';

/**
 * What the provider keeps of one ECS task: enough for a pod's status, taken
 * from a RunTask or DescribeTasks answer or from an "ECS Task State Change"
 * event. ECS numbers a task's states (`version`, the same counter in the API
 * and in the event's detail: "compare the version of a task reported by the
 * Amazon ECS API actions with the version reported in EventBridge"), so a
 * snapshot replaces another only when its version is higher: duplicated and
 * out-of-order events, and a poll that read an older state, change nothing.
 */

export interface ContainerSnapshot {
  name: string;
  /** PENDING, RUNNING or STOPPED. */
  lastStatus?: string;
  exitCode?: number;
  /** Why it stopped (e.g. `OutOfMemoryError: Container killed due to memory usage`, `CannotPullContainerError: ...`). */
  reason?: string;
  runtimeId?: string;
  imageDigest?: string;
  /** HEALTHY, UNHEALTHY or UNKNOWN, for a container with a health check: DescribeTasks only (events carry none). */
  healthStatus?: string;
  /** Epoch ms when `healthStatus` was first read as it is: ECS says when a check passed no more than when a container started. */
  healthAt?: number;
  /**
   * Epoch ms when this container was first seen running (or stopped), and
   * stopped: ECS reports no per-container times, so these are the `updatedAt`
   * of the first state that showed it (see {@link mergeSnapshot}).
   */
  startedAt?: number;
  finishedAt?: number;
}

export interface TaskSnapshot {
  arn: string;
  version: number;
  /** PROVISIONING, PENDING, ACTIVATING, RUNNING, DEACTIVATING, STOPPING, DEPROVISIONING, STOPPED (or DELETED). */
  lastStatus: string;
  desiredStatus?: string;
  stopCode?: string;
  stoppedReason?: string;
  /** Epoch milliseconds. */
  createdAt?: number;
  pullStartedAt?: number;
  pullStoppedAt?: number;
  startedAt?: number;
  stoppingAt?: number;
  stoppedAt?: number;
  /** When this state was reached (the event's `updatedAt`, or when it was read). */
  updatedAt?: number;
  /** The task ENI's private IPv4 address. */
  podIp?: string;
  containers: ContainerSnapshot[];
}

/** The task's state from the ECS API (RunTask, DescribeTasks), or undefined without an ARN. */
export function snapshotFromTask(task: Task): TaskSnapshot | undefined {
  if (!task.taskArn) return undefined;
  const ms = (d: Date | undefined) => (d ? d.getTime() : undefined);
  return compact({
    arn: task.taskArn,
    version: task.version ?? 0,
    lastStatus: task.lastStatus ?? 'PROVISIONING',
    desiredStatus: task.desiredStatus,
    stopCode: task.stopCode,
    stoppedReason: task.stoppedReason,
    createdAt: ms(task.createdAt),
    pullStartedAt: ms(task.pullStartedAt),
    pullStoppedAt: ms(task.pullStoppedAt),
    startedAt: ms(task.startedAt),
    stoppingAt: ms(task.stoppingAt),
    stoppedAt: ms(task.stoppedAt),
    podIp: eniAddress(task.attachments) ?? containerAddress(task.containers),
    containers: (task.containers ?? []).map((c) =>
      compact({
        name: c.name ?? '',
        lastStatus: c.lastStatus,
        exitCode: c.exitCode,
        reason: c.reason,
        runtimeId: c.runtimeId,
        imageDigest: c.imageDigest,
        healthStatus: c.healthStatus,
      }),
    ),
  });
}

type Attachments = ReadonlyArray<{
  type?: string;
  details?: ReadonlyArray<{ name?: string; value?: string }>;
}>;

/** The private IPv4 address of the task's ENI attachment (`ElasticNetworkInterface` in the API, `eni` in events). */
export function eniAddress(attachments: Attachments | undefined): string | undefined {
  for (const a of attachments ?? []) {
    if (a.type !== 'ElasticNetworkInterface' && a.type !== 'eni') continue;
    const ip = a.details?.find((d) => d.name === 'privateIPv4Address')?.value;
    if (ip) return ip;
  }
  return undefined;
}

function containerAddress(
  containers:
    | ReadonlyArray<{ networkInterfaces?: ReadonlyArray<{ privateIpv4Address?: string }> }>
    | undefined,
): string | undefined {
  for (const c of containers ?? []) {
    const ip = c.networkInterfaces?.find((n) => n.privateIpv4Address)?.privateIpv4Address;
    if (ip) return ip;
  }
  return undefined;
}

/**
 * `current` with the health statuses `read` (a DescribeTasks answer of the
 * same task and version, read at `seenAt`) reports, or undefined when they
 * are the same: a health check's result changes the task without a new
 * version.
 */
export function withHealth(
  current: TaskSnapshot | undefined,
  read: TaskSnapshot,
  seenAt: number,
): TaskSnapshot | undefined {
  if (!current || current.arn !== read.arn || read.version !== current.version) return undefined;
  const health = new Map(read.containers.map((c) => [c.name, c.healthStatus]));
  let changed = false;
  const containers = current.containers.map((c) => {
    const status = health.get(c.name);
    if (status === undefined || status === c.healthStatus) return c;
    changed = true;
    return { ...c, healthStatus: status, healthAt: seenAt };
  });
  return changed ? { ...current, containers } : undefined;
}

/** Whether `next` is a later state of the task than `current` (ECS's version counter). */
export function isNewer(next: TaskSnapshot, current: TaskSnapshot | undefined): boolean {
  if (!current) return true;
  if (next.arn !== current.arn) return false;
  return next.version > current.version;
}

/**
 * `next` (a newer state of the task) with the container times carried over
 * from `current` and stamped for containers first seen running or stopped
 * in it: ECS gives a task's startedAt and stoppedAt but no container's, and a
 * pod's init containers and restarts need them. States in version order give
 * times in order; a skipped intermediate state stamps its container with the
 * later time, which keeps the order.
 */
export function mergeSnapshot(
  current: TaskSnapshot | undefined,
  next: TaskSnapshot,
  seenAt: number,
): TaskSnapshot {
  const at = next.updatedAt ?? seenAt;
  const before = new Map((current?.arn === next.arn ? current.containers : []).map((c) => [c.name, c]));
  return {
    ...next,
    containers: next.containers.map((c) => {
      const old = before.get(c.name);
      const ran = c.lastStatus === 'RUNNING' || (c.lastStatus === 'STOPPED' && containerRan(c));
      const startedAt = old?.startedAt ?? (ran ? at : undefined);
      const finishedAt = old?.finishedAt ?? (c.lastStatus === 'STOPPED' ? at : undefined);
      // An event carries no health: the last one DescribeTasks read stands.
      const healthStatus = c.healthStatus ?? old?.healthStatus;
      const healthAt = healthStatus === old?.healthStatus ? old?.healthAt : healthStatus ? seenAt : undefined;
      return compact({ ...c, startedAt, finishedAt, healthStatus, healthAt });
    }),
  };
}

/**
 * Whether a stopped container ever ran: it has an exit code, and the agent
 * did not stop it for a dependency that can never be met (ECS's agent gives
 * such a container exit code 143 and a CannotStartContainerError reason, as
 * amazon-ecs-agent's "terminal dependency error" handling does).
 */
export function containerRan(c: ContainerSnapshot): boolean {
  return c.exitCode !== undefined && c.reason?.startsWith('CannotStartContainerError') !== true;
}

export function isStopped(snapshot: TaskSnapshot | undefined): boolean {
  return snapshot?.lastStatus === 'STOPPED' || snapshot?.lastStatus === 'DELETED';
}

/** The object without its undefined properties (DynamoDB's marshaller and deepEqual both prefer it). */
export function compact<T extends object>(value: T): T {
  for (const key in value) if (value[key] === undefined) delete value[key];
  return value;
}
