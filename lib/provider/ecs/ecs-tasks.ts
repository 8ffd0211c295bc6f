import {
  ConflictException,
  DescribeClustersCommand,
  DescribeTasksCommand,
  type ECSClient,
  ListTasksCommand,
  RunTaskCommand,
  type RunTaskCommandInput,
  StopTaskCommand,
  type Task,
} from '@aws-sdk/client-ecs';

/**
 * The ECS calls of the provider, over an injected ECSClient (the only module
 * of the provider that sends ECS commands). Throttling and 5xx answers are
 * retried by the SDK's standard retry strategy; what still fails is thrown
 * to the caller, whose next look at the pod tries again.
 */

/** RunTask answered with failures[] and no task: nothing runs (no capacity, ENI limits...). */
export class LaunchFailedError extends Error {
  override readonly name = 'LaunchFailedError';
}

export function isLaunchFailed(err: unknown): err is LaunchFailedError {
  return err instanceof LaunchFailedError;
}

/** DescribeTasks takes at most this many tasks per call. */
export const DESCRIBE_BATCH = 100;

export class EcsTasks {
  constructor(
    private readonly ecs: ECSClient,
    private readonly cluster: string,
  ) {}

  /**
   * Starts one task. A repeated clientToken with the same parameters returns
   * the task it started; with other parameters ECS answers ConflictException
   * naming the task already started for that token, which is the task we
   * want (only this provider uses our tokens): its ARN is returned.
   * @throws LaunchFailedError with ECS's reason when no task was started.
   */
  async run(
    input: Omit<RunTaskCommandInput, 'cluster' | 'count'>,
    signal?: AbortSignal,
  ): Promise<Task | string> {
    try {
      const out = await this.ecs.send(
        new RunTaskCommand({ ...input, cluster: this.cluster, count: 1 }),
        signal ? { abortSignal: signal } : {},
      );
      const task = out.tasks?.[0];
      if (task?.taskArn) return task;
      const reasons = (out.failures ?? []).map((f) => [f.reason, f.detail].filter(Boolean).join(': '));
      // Without a failure it is not a definite answer: the caller retries with the same clientToken.
      if (reasons.length === 0) throw new Error('RunTask answered with neither a task nor a failure');
      throw new LaunchFailedError(`ECS started no task: ${reasons.join('; ')}`);
    } catch (err) {
      const existing = err instanceof ConflictException ? err.resourceIds?.[0] : undefined;
      if (existing) return existing;
      throw err;
    }
  }

  /** The tasks ECS knows (in batches of 100), and the ARNs it reported MISSING. */
  async describe(
    arns: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ tasks: Task[]; missing: string[] }> {
    const tasks: Task[] = [];
    const missing: string[] = [];
    for (let i = 0; i < arns.length; i += DESCRIBE_BATCH) {
      const out = await this.ecs.send(
        new DescribeTasksCommand({
          cluster: this.cluster,
          tasks: arns.slice(i, i + DESCRIBE_BATCH),
          include: ['TAGS'],
        }),
        signal ? { abortSignal: signal } : {},
      );
      tasks.push(...(out.tasks ?? []));
      for (const f of out.failures ?? []) if (f.arn && f.reason === 'MISSING') missing.push(f.arn);
    }
    return { tasks, missing };
  }

  /**
   * Asks ECS to stop a task: its containers get SIGTERM, then SIGKILL after
   * their stopTimeout. Stopping a stopped task, or one ECS no longer knows,
   * is done already.
   */
  async stop(arn: string, reason: string, signal?: AbortSignal): Promise<Task | undefined> {
    try {
      const out = await this.ecs.send(
        new StopTaskCommand({ cluster: this.cluster, task: arn, reason: reason.slice(0, 255) }),
        signal ? { abortSignal: signal } : {},
      );
      return out.task;
    } catch (err) {
      if (isTaskNotFound(err)) return undefined;
      throw err;
    }
  }

  /** ARNs of the tasks started with `startedBy` (running ones, or the recently stopped ones), every page. */
  async list(
    startedBy: string,
    desiredStatus: 'RUNNING' | 'STOPPED',
    signal?: AbortSignal,
  ): Promise<string[]> {
    const arns: string[] = [];
    let nextToken: string | undefined;
    do {
      const out = await this.ecs.send(
        new ListTasksCommand({ cluster: this.cluster, startedBy, desiredStatus, maxResults: 100, nextToken }),
        signal ? { abortSignal: signal } : {},
      );
      arns.push(...(out.taskArns ?? []));
      nextToken = out.nextToken;
    } while (nextToken);
    return arns;
  }

  /** The cluster's status (ACTIVE when it can run tasks), or undefined when ECS does not know it. */
  async clusterStatus(signal?: AbortSignal): Promise<string | undefined> {
    const out = await this.ecs.send(
      new DescribeClustersCommand({ clusters: [this.cluster] }),
      signal ? { abortSignal: signal } : {},
    );
    return out.clusters?.[0]?.status;
  }
}

/** StopTask's answer for a task ECS no longer has (InvalidParameterException "...task was not found"). */
function isTaskNotFound(err: unknown): boolean {
  return (
    err instanceof Error &&
    err.name === 'InvalidParameterException' &&
    /task (was )?not found|not found.*task/i.test(err.message)
  );
}
