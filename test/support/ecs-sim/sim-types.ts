/**
 * What the ECS simulation keeps, in ECS's own vocabulary (the API's Task and
 * Container fields), plus what it needs to move tasks along.
 */

/** How a container's process behaves, read from its command: run time, exit code, what it prints. */
export interface ContainerRun {
  /** Seconds from start to exit; absent: it runs until stopped. */
  seconds?: number;
  exitCode: number;
  /** It ignores SIGTERM: a stop kills it only after its stopTimeout (exit code 137). */
  ignoresTerm: boolean;
  /** Lines it prints when it starts (written to CloudWatch Logs by the awslogs driver). */
  lines: string[];
  /** Files its script makes (`touch`) or removes (`rm`), seconds after its start: what a health check's `test -e` sees. */
  files?: Array<{ path: string; at: number; exists: boolean }>;
}

/** A container definition's health check (the API's HealthCheck, ECS's defaults filled in). */
export interface SimHealthCheck {
  command: string[];
  interval: number;
  timeout: number;
  retries: number;
  startPeriod: number;
}

/** Reads a container's argv (ENTRYPOINT + CMD) against its environment. */
export type ContainerBehaviour = (
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
) => ContainerRun;

export interface SimContainer {
  name: string;
  image: string;
  essential: boolean;
  /** Names of containers that must exit 0 first (condition SUCCESS). */
  after: string[];
  stopTimeoutSeconds: number;
  run: ContainerRun;
  healthCheck?: SimHealthCheck;
  /** The environment the container got (definition, overrides and secrets resolved): what a test may inspect. */
  env: Readonly<Record<string, string>>;
  lastStatus: 'PENDING' | 'RUNNING' | 'STOPPED';
  exitCode?: number;
  reason?: string;
  runtimeId: string;
  /** Sim time (ms) it started, and when it stops by itself or by a signal. */
  startedAt?: number;
  stopsAt?: number;
  /** The exit code it stops with at `stopsAt` when that is a signal's doing. */
  stopCode?: number;
  logStream?: string;
}

export type TaskStatus =
  | 'PROVISIONING'
  | 'PENDING'
  | 'ACTIVATING'
  | 'RUNNING'
  | 'DEACTIVATING'
  | 'STOPPING'
  | 'DEPROVISIONING'
  | 'STOPPED';

export interface SimTask {
  arn: string;
  id: string;
  clusterArn: string;
  taskDefinitionArn: string;
  group: string;
  startedBy?: string;
  clientToken?: string;
  tags: Array<{ key: string; value: string }>;
  overrides: unknown;
  cpu: string;
  memory: string;
  capacityProvider: string;
  createdAt: number;
  version: number;
  lastStatus: TaskStatus;
  desiredStatus: 'RUNNING' | 'STOPPED';
  stopCode?: string;
  stoppedReason?: string;
  pullStartedAt?: number;
  pullStoppedAt?: number;
  startedAt?: number;
  stoppingAt?: number;
  stoppedAt?: number;
  podIp: string;
  eniId: string;
  subnet: string;
  containers: SimContainer[];
  /** Sim time of the next task-level step (provisioning done, pull done, deprovisioned). */
  nextStepAt?: number;
  /** Why the task cannot start, decided at RunTask (missing secret, image that cannot be pulled). */
  startFailure?: { stopCode: string; reason: string; container?: string };
  /** The DescribeTasks/ListTasks answer shows it from this sim time (eventual consistency). */
  visibleAt: number;
}
