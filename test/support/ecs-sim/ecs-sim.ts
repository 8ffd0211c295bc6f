import { createHash, randomUUID } from 'node:crypto';
import type { LogsSim } from './logs-sim.ts';
import { dependencyProblems, runTaskProblems, taskDefinitionProblems } from './sim-checks.ts';
import { SimError } from './sim-error.ts';
import { healthStatus } from './sim-health.ts';
import { taskEvent, taskJson } from './sim-json.ts';
import { type LifecycleTimes, nextStep, stopTask } from './sim-lifecycle.ts';
import { newTask } from './sim-new-task.ts';
import type { ContainerBehaviour, SimContainer, SimTask } from './sim-types.ts';
import type { SsmSim } from './ssm-sim.ts';

/**
 * A stateful ECS (Fargate) following the documented API, for the operations
 * the provider uses. Each behaviour and where it is documented:
 *
 * - RunTask `clientToken` ("ensure the idempotency of the request", up to
 *   64 characters): the same token with the same parameters returns the
 *   task it started; with other parameters, ConflictException naming the
 *   task(s) in `resourceIds` (RunTask errors). Tokens are kept for 24 hours.
 * - RunTask `failures[]`: a call may start no task and answer with a
 *   failure (e.g. "Capacity is unavailable at this time..."), see
 *   {@link failNextRunTask} and {@link capacity}.
 * - ThrottlingException ("Rate exceeded") for bursts, see {@link throttle}.
 * - Eventual consistency (RunTask: "the result of an API command ... might
 *   not be immediately visible to all subsequent commands"): DescribeTasks
 *   answers MISSING, and ListTasks omits the task, for `visibilityDelayMs`.
 * - DescribeTasks takes at most 100 tasks (InvalidParameterException);
 *   ListTasks pages of at most 100 with nextToken; stopped tasks stay
 *   visible for `retainStoppedMs` (at least an hour in ECS), then MISSING.
 * - StopTask of a task already stopped answers the task as it is; of a task
 *   ECS no longer knows, InvalidParameterException "The referenced task was
 *   not found." (the API reference documents neither; the provider treats
 *   both as stopped).
 * - The task lifecycle and container dependencies: sim-lifecycle.ts.
 * - "ECS Task State Change" events on every step, `detail.version` growing
 *   by one; delivered at least once and not in order, see {@link events}.
 */

export interface EcsSimOptions {
  now: () => number;
  region: string;
  account: string;
  ssm: SsmSim;
  logs: LogsSim;
  behaviour: ContainerBehaviour;
  times?: Partial<LifecycleTimes>;
  visibilityDelayMs?: number;
  retainStoppedMs?: number;
}

/** How events reach their consumer: each published event, plus the knobs that make delivery at-least-once and unordered. */
export interface EventDelivery {
  deliver: (event: Record<string, unknown>) => void;
  /** Every n-th event is delivered twice (0: never). */
  duplicateEvery: number;
  /** Every n-th event is held back and delivered after the next one (0: never). */
  delayEvery: number;
}

const TOKEN_TTL_MS = 24 * 60 * 60_000;

export class EcsSim {
  readonly tasks = new Map<string, SimTask>();
  readonly definitions = new Map<string, Array<Record<string, unknown>>>();
  readonly clusters = new Map<string, 'ACTIVE' | 'INACTIVE'>();
  readonly calls: Record<string, number> = {};
  readonly requests: Array<{ operation: string; body: Record<string, unknown> }> = [];
  /** Every event published, in order. */
  readonly published: Array<Record<string, unknown>> = [];
  events: EventDelivery | undefined;
  /** At most this many tasks run at once; RunTask beyond it answers a capacity failure. */
  capacity = Number.POSITIVE_INFINITY;
  readonly #tokens = new Map<string, { hash: string; arns: string[]; at: number }>();
  readonly #throttles = new Map<string, number>();
  readonly #lostAnswers = new Map<string, number>();
  readonly #launchFailures: string[] = [];
  #held: { event: Record<string, unknown>; tick: number } | undefined;
  #eventCount = 0;
  #ticks = 0;
  readonly #times: LifecycleTimes;

  constructor(private readonly options: EcsSimOptions) {
    this.#times = { provisionMs: 300, pullMs: 300, termMs: 200, deprovisionMs: 300, ...options.times };
  }

  /** The next `count` calls of `operation` answer ThrottlingException. */
  throttle(operation: string, count: number): void {
    this.#throttles.set(operation, (this.#throttles.get(operation) ?? 0) + count);
  }

  /**
   * The next `count` calls of `operation` are carried out but their answers
   * lost (ServerException, HTTP 500, which the SDK retries): what a timeout
   * after the request reached ECS looks like to the caller.
   */
  loseAnswers(operation: string, count: number): void {
    this.#lostAnswers.set(operation, (this.#lostAnswers.get(operation) ?? 0) + count);
  }

  /** The next RunTask starts nothing and answers this failure reason. */
  failNextRunTask(reason: string): void {
    this.#launchFailures.push(reason);
  }

  /** Runs every lifecycle step due by now, publishing an event for each. */
  tick(): void {
    const now = this.options.now();
    this.#ticks += 1;
    for (;;) {
      let due: { task: SimTask; step: NonNullable<ReturnType<typeof nextStep>> } | undefined;
      for (const task of this.tasks.values()) {
        const step = nextStep(task, this.#times, (c, at) => this.#started(task, c, at));
        if (step && step.at <= now && (!due || step.at < due.step.at)) due = { task, step };
      }
      if (!due) break;
      due.step.apply();
      this.#changed(due.task, due.step.at);
    }
    // A held-back event overtaken by nothing in its own tick goes out at the next one.
    const held = this.#held;
    if (held && held.tick < this.#ticks) {
      this.#held = undefined;
      this.events?.deliver(held.event);
    }
  }

  handle(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    this.tick();
    this.calls[operation] = (this.calls[operation] ?? 0) + 1;
    this.requests.push({ operation, body });
    const throttled = this.#throttles.get(operation) ?? 0;
    if (throttled > 0) {
      this.#throttles.set(operation, throttled - 1);
      throw new SimError('ThrottlingException', 'Rate exceeded');
    }
    const answer = this.#operation(operation, body);
    const lost = this.#lostAnswers.get(operation) ?? 0;
    if (lost > 0) {
      this.#lostAnswers.set(operation, lost - 1);
      throw new SimError('ServerException', 'We encountered an internal error. Please try again.', 500);
    }
    return answer;
  }

  #operation(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    switch (operation) {
      case 'RegisterTaskDefinition':
        return this.#register(body);
      case 'RunTask':
        return this.#run(body);
      case 'DescribeTasks':
        return this.#describe(body);
      case 'StopTask':
        return this.#stop(body);
      case 'ListTasks':
        return this.#list(body);
      case 'DescribeClusters':
        return this.#describeClusters(body);
      default:
        throw new SimError('UnknownOperationException', `the simulation does not implement ECS ${operation}`);
    }
  }

  /** Tasks whose group names this pod uid (every task the provider started for it). */
  tasksOf(uid: string): SimTask[] {
    return [...this.tasks.values()].filter((t) => t.group.startsWith(`svk:${uid}:`));
  }

  clusterArn(name: string): string {
    return `arn:aws:ecs:${this.options.region}:${this.options.account}:cluster/${name}`;
  }

  #register(body: Record<string, unknown>): Record<string, unknown> {
    const problems = [...taskDefinitionProblems(body), ...dependencyProblems(body)];
    if (problems.length > 0) throw new SimError('ClientException', problems.join('; '));
    const family = String(body.family);
    const revisions = this.definitions.get(family) ?? [];
    const revision = revisions.length + 1;
    const arn = `arn:aws:ecs:${this.options.region}:${this.options.account}:task-definition/${family}:${revision}`;
    const definition = { ...body, taskDefinitionArn: arn, revision, status: 'ACTIVE' };
    this.definitions.set(family, [...revisions, definition]);
    return { taskDefinition: definition };
  }

  #definition(ref: string): Record<string, unknown> {
    const m = /task-definition\/([A-Za-z0-9_-]+):(\d+)$/.exec(ref) ?? /^([A-Za-z0-9_-]+):(\d+)$/.exec(ref);
    const found = m?.[1] ? this.definitions.get(m[1])?.[Number(m[2]) - 1] : undefined;
    if (!found) throw new SimError('ClientException', 'Unable to describe task definition.');
    return found;
  }

  #cluster(body: Record<string, unknown>): string {
    const name = String(body.cluster ?? 'default').replace(/^arn:.*:cluster\//, '');
    if (this.clusters.get(name) !== 'ACTIVE')
      throw new SimError('ClusterNotFoundException', 'Cluster not found.');
    return name;
  }

  #run(body: Record<string, unknown>): Record<string, unknown> {
    const problems = runTaskProblems(body);
    if (problems.length > 0) throw new SimError('InvalidParameterException', problems.join('; '));
    const cluster = this.#cluster(body);
    const definition = this.#definition(String(body.taskDefinition));
    const now = this.options.now();
    const token = typeof body.clientToken === 'string' ? body.clientToken : undefined;
    const hash = createHash('sha256')
      .update(JSON.stringify({ ...body, clientToken: undefined }))
      .digest('hex');
    const known = token ? this.#tokens.get(token) : undefined;
    if (known && now - known.at < TOKEN_TTL_MS) {
      if (known.hash !== hash)
        throw new SimError(
          'ConflictException',
          'The RunTask request could not be processed due to conflicts. The provided clientToken is already in use with a different RunTask request.',
          400,
          { resourceIds: known.arns },
        );
      // The idempotent answer: the tasks this token started, as they are (no eventual consistency here).
      const tasks = known.arns.flatMap((a) => {
        const t = this.tasks.get(a);
        return t ? [taskJson(t, true, this.options.region, this.options.account)] : [];
      });
      return { tasks, failures: [] };
    }
    const reason =
      this.#launchFailures.shift() ??
      (this.#running() >= this.capacity
        ? 'Capacity is unavailable at this time. Please try again later or in a different availability zone'
        : undefined);
    if (reason) return { tasks: [], failures: [{ reason }] };
    const task = newTask({
      cluster,
      clusterArn: this.clusterArn(cluster),
      definition,
      body,
      now,
      index: this.tasks.size,
      region: this.options.region,
      account: this.options.account,
      provisionMs: this.#times.provisionMs,
      visibilityDelayMs: this.options.visibilityDelayMs ?? 1_000,
      ssm: this.options.ssm,
      behaviour: this.options.behaviour,
    });
    this.tasks.set(task.arn, task);
    if (token) this.#tokens.set(token, { hash, arns: [task.arn], at: now });
    this.#changed(task, now);
    return { tasks: [taskJson(task, true, this.options.region, this.options.account)], failures: [] };
  }

  #started(task: SimTask, c: SimContainer, at: number): void {
    if (!c.logStream) return;
    const [group, prefix] = c.logStream.split('\n');
    c.run.lines.forEach((line, i) => {
      this.options.logs.write(group ?? '', `${prefix}/${task.id}`, at + i, line);
    });
  }

  #running(): number {
    return [...this.tasks.values()].filter((t) => t.lastStatus !== 'STOPPED').length;
  }

  /** The task as DescribeTasks may show it now, or nothing while it is not yet (or no longer) visible. */
  #visible(arn: string, withTags: boolean): Array<Record<string, unknown>> {
    const task = this.tasks.get(arn);
    const now = this.options.now();
    if (!task || now < task.visibleAt) return [];
    if (task.stoppedAt !== undefined && now - task.stoppedAt > (this.options.retainStoppedMs ?? 3_600_000))
      return [];
    const json = taskJson(task, withTags, this.options.region, this.options.account);
    // DescribeTasks reports each checked container's health (a task state change event carries none).
    const containers = (json.containers as Array<Record<string, unknown>> | undefined) ?? [];
    for (const [i, c] of task.containers.entries()) {
      const status = healthStatus(c, now);
      const shown = containers[i];
      if (status && shown) shown.healthStatus = status;
    }
    return [json];
  }

  #describe(body: Record<string, unknown>): Record<string, unknown> {
    this.#cluster(body);
    const arns = (body.tasks as string[] | undefined) ?? [];
    if (arns.length > 100)
      throw new SimError('InvalidParameterException', 'Tasks cannot be longer than 100.');
    const withTags = ((body.include as string[] | undefined) ?? []).includes('TAGS');
    const tasks = arns.flatMap((a) => this.#visible(a, withTags));
    const shown = new Set(tasks.map((t) => t.taskArn));
    return { tasks, failures: arns.filter((a) => !shown.has(a)).map((arn) => ({ arn, reason: 'MISSING' })) };
  }

  #stop(body: Record<string, unknown>): Record<string, unknown> {
    this.#cluster(body);
    const reason = typeof body.reason === 'string' ? body.reason : 'Task stopped by user';
    // "Up to 255 characters are allowed in this message."
    if (reason.length > 255) throw new SimError('InvalidParameterException', 'reason: up to 255 characters');
    const task = this.tasks.get(String(body.task));
    if (!task || this.#visible(task.arn, false).length === 0)
      throw new SimError('InvalidParameterException', 'The referenced task was not found.');
    if (task.desiredStatus !== 'STOPPED') {
      const now = this.options.now();
      stopTask(task, now, 'UserInitiated', reason, this.#times);
      this.#changed(task, now);
    }
    return { task: taskJson(task, false, this.options.region, this.options.account) };
  }

  #list(body: Record<string, unknown>): Record<string, unknown> {
    this.#cluster(body);
    const max = typeof body.maxResults === 'number' ? body.maxResults : 100;
    if (max < 1 || max > 100) throw new SimError('InvalidParameterException', 'maxResults must be 1 to 100');
    const desired = body.desiredStatus ?? 'RUNNING';
    const now = this.options.now();
    const arns = [...this.tasks.values()]
      .filter(
        (t) =>
          now >= t.visibleAt &&
          t.desiredStatus === desired &&
          (body.startedBy === undefined || t.startedBy === body.startedBy),
      )
      .map((t) => t.arn)
      .sort();
    const from = typeof body.nextToken === 'string' ? Number(body.nextToken) : 0;
    const page = arns.slice(from, from + max);
    return { taskArns: page, ...(from + max < arns.length ? { nextToken: String(from + max) } : {}) };
  }

  #describeClusters(body: Record<string, unknown>): Record<string, unknown> {
    const names = ((body.clusters as string[] | undefined) ?? ['default']).map((n) =>
      n.replace(/^arn:.*:cluster\//, ''),
    );
    const clusters = names
      .filter((n) => this.clusters.has(n))
      .map((n) => ({ clusterArn: this.clusterArn(n), clusterName: n, status: this.clusters.get(n) }));
    const failures = names
      .filter((n) => !this.clusters.has(n))
      .map((n) => ({ arn: this.clusterArn(n), reason: 'MISSING' }));
    return { clusters, failures };
  }

  /** A task changed: a new version and its event, delivered at least once and not always in order. */
  #changed(task: SimTask, at: number): void {
    task.version += 1;
    const event = taskEvent(task, at, this.options.region, this.options.account, randomUUID());
    this.published.push(event);
    const delivery = this.events;
    if (!delivery) return;
    this.#eventCount += 1;
    const n = this.#eventCount;
    if (delivery.delayEvery > 0 && n % delivery.delayEvery === 0 && !this.#held) {
      this.#held = { event, tick: this.#ticks };
      return;
    }
    delivery.deliver(event);
    if (delivery.duplicateEvery > 0 && n % delivery.duplicateEvery === 0) delivery.deliver(event);
    const held = this.#held;
    this.#held = undefined;
    if (held) delivery.deliver(held.event);
  }
}
