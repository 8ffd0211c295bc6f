import { ConfigError } from '../config/config.ts';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../events/pod-event.ts';
import { TASK_STATE_DETAIL_TYPE, TASK_STATE_SOURCE } from '../provider/ecs/task-state-event.ts';
import type { TickQueue } from '../tick/tick-queue.ts';
import { deployedRetryPolicy } from './async-retry-policy.ts';
import { type Cadence, TICK_TIMEOUT_MS, TICK_VISIBILITY_TIMEOUT_MS, tickPeriodMs } from './cadence.ts';
import {
  createDeploymentHandlers,
  type DeploymentFunction,
  type FunctionKubeconfigs,
} from './deployment-handlers.ts';
import { LocalEventBus } from './event-bus.ts';
import { FunctionHost, type HostProcessOptions } from './function-host.ts';
import type { InvocationResult, LambdaHandler, Invocation as RuntimeInvocation } from './lambda-function.ts';
import { LocalLambdaRuntime } from './lambda-runtime.ts';
import { createLocalBusPublisher } from './local-bus-publisher.ts';
import { LocalSqsQueue } from './local-sqs-queue.ts';
import { createLocalTickQueue, QueueEventSource } from './queue-event-source.ts';

/** pod-sync's reserved concurrency: the default of `podSyncConcurrency` in serverless.yml. */
export const DEFAULT_POD_SYNC_CONCURRENCY = 10;

/** Environment variable of `npm start` that overrides {@link DEFAULT_POD_SYNC_CONCURRENCY}. */
export const POD_SYNC_CONCURRENCY_VARIABLE = 'SVK_LOCAL_POD_SYNC_CONCURRENCY';

/** pod-sync's reserved concurrency, or `unlimited` for none (every pod event starts an invocation at once). */
export type PodSyncConcurrency = number | 'unlimited';

/** `unlimited` or a positive whole number, as text (an env var, a command-line flag); undefined when it is neither. */
export function parsePodSyncConcurrency(raw: string): PodSyncConcurrency | undefined {
  const text = raw.trim();
  if (text === 'unlimited') return text;
  const value = Number(text);
  return /^\d+$/.test(text) && Number.isSafeInteger(value) && value >= 1 ? value : undefined;
}

/**
 * Reads `SVK_LOCAL_POD_SYNC_CONCURRENCY`: a positive whole number or
 * `unlimited`; unset or empty gives the default. Anything else is a
 * {@link ConfigError} naming the variable.
 */
export function podSyncConcurrencyFromEnv(env: Record<string, string | undefined>): PodSyncConcurrency {
  const raw = env[POD_SYNC_CONCURRENCY_VARIABLE]?.trim();
  if (!raw) return DEFAULT_POD_SYNC_CONCURRENCY;
  const value = parsePodSyncConcurrency(raw);
  if (value === undefined) {
    throw new ConfigError([
      {
        variable: POD_SYNC_CONCURRENCY_VARIABLE,
        message: `must be a positive whole number or unlimited (got "${raw}")`,
      },
    ]);
  }
  return value;
}

export interface LocalDeploymentOptions {
  /** The functions' environment (their configuration). */
  env: Record<string, string | undefined>;
  /**
   * Each function's own kubeconfig (its SVK_KUBECONFIG instead of `env`'s):
   * each function with its own cluster user, as EKS access entries map each
   * function's role, so a call its role in infra/rbac.yaml lacks fails here.
   */
  kubeconfigs?: FunctionKubeconfigs;
  /** Default `tick`, as serverless.yml deploys. */
  cadence?: Cadence;
  /**
   * Schedule of heartbeat, pod-watch, pod-status and reconcile (continuous),
   * or of the tick chain's keeper (tick); 60 s as in serverless.yml.
   */
  rateMs?: number;
  /** Timeout of the scheduled functions of the continuous cadence; 130 s as in serverless.yml. */
  timeoutMs?: number;
  /** Deliveries of a pod event that pod-sync fails before it is dead-lettered (EventBridge and Lambda retry). */
  syncRetries?: number;
  syncRetryDelayMs?: number;
  /**
   * `deployed`: pod-sync's and ecs-task-state's events are retried as
   * serverless.yml deploys them (their functions' retries, one and two
   * minutes apart, within their maximum event age: async-retry-policy.ts),
   * and `syncRetries` and `syncRetryDelayMs` are ignored. Default: those two.
   */
  retryPolicy?: 'deployed';
  /**
   * pod-sync's reserved concurrency, as `podSyncConcurrency` in serverless.yml
   * (default {@link DEFAULT_POD_SYNC_CONCURRENCY}): pod events beyond it wait
   * in the runtime's queue. `unlimited` starts every delivery at once.
   */
  podSyncConcurrency?: PodSyncConcurrency;
  /**
   * Where the handlers run: `in-process` (default) in this process, like one
   * warm sandbox per function; `host-process` in one separate process (a
   * {@link FunctionHost}) that {@link LocalDeployment.killFunctions} can
   * SIGKILL mid-invocation.
   */
  sandboxes?: 'in-process' | 'host-process';
  /** With `host-process`: node arguments and environment variables the host process is forked with (a test's `--import`). */
  hostProcess?: HostProcessOptions;
  onResult?: (invocation: RuntimeInvocation, result: InvocationResult) => void;
}

/**
 * Where the handlers run: a function host process (`host-process`), or this
 * process; each with its own kubeconfig when `kubeconfigs` names one.
 */
function deploymentSandboxes(
  options: LocalDeploymentOptions,
  bus: LocalEventBus,
  tickQueue: TickQueue | undefined,
): { handler: (name: DeploymentFunction) => LambdaHandler; host?: FunctionHost } {
  if (options.sandboxes === 'host-process') {
    const host = new FunctionHost({
      env: options.env,
      ...(options.kubeconfigs ? { kubeconfigs: options.kubeconfigs } : {}),
      putEvents: (entries) => bus.putEvents(entries),
      ...(tickQueue ? { tickQueue } : {}),
      ...(options.hostProcess ? { process: options.hostProcess } : {}),
    });
    return { handler: (name) => host.handler(name), host };
  }
  const handlers = createDeploymentHandlers(
    options.env,
    createLocalBusPublisher(bus),
    tickQueue,
    options.kubeconfigs,
  );
  return { handler: (name) => handlers[name] };
}

/** What the tick cadence adds: the chain's queue and the event source mapping that delivers it. */
interface TickChain {
  queue: LocalSqsQueue;
  source: QueueEventSource;
}

/**
 * The whole deployment of serverless.yml in one process: the node and pod
 * loops at their cadence (the tick function behind its in-process FIFO queue
 * and keeper schedule, or the four scheduled functions), and pod-sync (with
 * its reserved concurrency) behind a rule on an in-process event bus that
 * pod-watch publishes to. The queue, the bus and the schedules stay in this
 * process; the handlers run here or in a function host process. Used by
 * `npm start`, the pipeline tests and the conformance harness.
 */
export class LocalDeployment {
  readonly runtime: LocalLambdaRuntime;
  readonly bus: LocalEventBus;
  readonly cadence: Cadence;
  /** The tick chain (tick cadence only). */
  readonly tickChain: TickChain | undefined;
  /**
   * The account's default bus, where AWS services put their events (ECS's
   * task state changes: {@link LocalEventBus.deliverServiceEvent}); its rule
   * delivers them to ecs-task-state, as serverless.yml's rule does.
   */
  readonly awsBus: LocalEventBus;
  /** The process the handlers run in, with `sandboxes: 'host-process'`. */
  readonly host: FunctionHost | undefined;
  private readonly schedules: Array<{ stop(): void }> = [];
  private readonly rateMs: number;

  constructor(options: LocalDeploymentOptions) {
    const timeoutMs = options.timeoutMs ?? 130_000;
    this.cadence = options.cadence ?? 'tick';
    this.rateMs = options.rateMs ?? 60_000;
    this.runtime = new LocalLambdaRuntime(options.onResult ? { onResult: options.onResult } : {});
    const deployed = options.retryPolicy === 'deployed';
    this.bus = new LocalEventBus({
      retries: options.syncRetries ?? 5,
      retryDelayMs: options.syncRetryDelayMs ?? 2_000,
      ...(deployed ? { retryPolicy: deployedRetryPolicy('podSync') } : {}),
    });
    // The chain's queue lives here even when the handlers run in a host process, as SQS outlives sandboxes.
    const queue =
      this.cadence === 'tick'
        ? new LocalSqsQueue({
            delayMs: tickPeriodMs(options.env),
            visibilityTimeoutMs: TICK_VISIBILITY_TIMEOUT_MS,
          })
        : undefined;
    const tickQueue = queue ? createLocalTickQueue(queue) : undefined;
    const sandboxes = deploymentSandboxes(options, this.bus, tickQueue);
    this.host = sandboxes.host;
    const { handler } = sandboxes;
    if (queue) {
      this.runtime.register({ name: 'tick', handler: handler('tick'), timeoutMs: TICK_TIMEOUT_MS });
      const source = new QueueEventSource({
        queue,
        queueName: 'tick.fifo',
        runtime: this.runtime,
        functionName: 'tick',
      });
      this.tickChain = { queue, source };
    } else {
      this.tickChain = undefined;
      for (const name of ['heartbeat', 'pod-watch', 'pod-status', 'reconcile'] as const) {
        this.runtime.register({ name, handler: handler(name), timeoutMs });
      }
    }
    const podSyncConcurrency = options.podSyncConcurrency ?? DEFAULT_POD_SYNC_CONCURRENCY;
    this.runtime.register({
      name: 'pod-sync',
      handler: handler('pod-sync'),
      timeoutMs: 60_000,
      ...(podSyncConcurrency === 'unlimited' ? {} : { reservedConcurrency: podSyncConcurrency }),
    });
    this.bus.addRule({
      name: 'pod-sync',
      pattern: { source: [POD_EVENT_SOURCE], 'detail-type': [POD_EVENT_DETAIL_TYPE] },
      target: this.runtime.asTarget('pod-sync'),
    });
    this.runtime.register({
      name: 'ecs-task-state',
      handler: handler('ecs-task-state'),
      timeoutMs: 30_000,
      reservedConcurrency: 10,
    });
    this.awsBus = new LocalEventBus({
      retries: 2,
      retryDelayMs: options.syncRetryDelayMs ?? 2_000,
      ...(deployed ? { retryPolicy: deployedRetryPolicy('ecsTaskState') } : {}),
    });
    this.awsBus.addRule({
      name: 'ecs-task-state',
      pattern: { source: [TASK_STATE_SOURCE], 'detail-type': [TASK_STATE_DETAIL_TYPE] },
      target: this.runtime.asTarget('ecs-task-state'),
    });
  }

  /**
   * Starts the loops: the tick chain's event source and its keeper (which
   * starts the chain at once), or the schedules of the continuous functions
   * (all four unless `functions` names some), each firing at once and then
   * every rate.
   */
  start(functions: readonly string[] = ['heartbeat', 'pod-watch', 'pod-status', 'reconcile']): void {
    if (this.tickChain) {
      this.tickChain.source.start();
      this.schedules.push(this.runtime.schedule('tick', { rateMs: this.rateMs, startImmediately: true }));
      return;
    }
    for (const name of functions) {
      this.schedules.push(this.runtime.schedule(name, { rateMs: this.rateMs, startImmediately: true }));
    }
  }

  /**
   * SIGKILLs every function's sandbox at once, mid-invocation (needs
   * `sandboxes: 'host-process'`): invocations in flight fail as a dead
   * runtime (pod events are retried by the bus), schedules keep firing, and
   * the next invocation is a cold start in a new process.
   */
  async killFunctions(): Promise<void> {
    if (!this.host) throw new Error("killFunctions needs a deployment with sandboxes: 'host-process'");
    await this.host.kill();
  }

  /** Stops the loops; running invocations are crashed when `abortRunning`, else awaited. */
  async stop(options: { abortRunning?: boolean } = {}): Promise<void> {
    for (const s of this.schedules.splice(0)) s.stop();
    const polling = this.tickChain?.source.stop();
    await this.runtime.stopAll(options);
    await polling;
    await this.bus.whenIdle();
    await this.awsBus.whenIdle();
    await this.host?.stop();
  }
}
