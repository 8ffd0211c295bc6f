import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { createPodStatusHandler } from '../../functions/pod-status.ts';
import { createPodSyncHandler } from '../../functions/pod-sync.ts';
import { createPodWatchHandler } from '../../functions/pod-watch.ts';
import { createReconcileHandler } from '../../functions/reconcile.ts';
import { createTickHandler } from '../../functions/tick.ts';
import { ConfigError } from '../config/config.ts';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../events/pod-event.ts';
import { LocalEventBus } from './event-bus.ts';
import type { InvocationResult, Invocation as RuntimeInvocation } from './lambda-function.ts';
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

/**
 * How the node and pod loops run, as serverless.yml's `cadence` parameter:
 * `tick`, short invocations of one function chained through a FIFO queue
 * (lib/tick/); `continuous`, the four scheduled functions that each run for
 * two minutes and overlap.
 */
export type Cadence = 'tick' | 'continuous';

/** Environment variable of `npm start` that picks the cadence (serverless.yml's `cadence` parameter). */
export const CADENCE_VARIABLE = 'SVK_LOCAL_CADENCE';

/** Reads `SVK_LOCAL_CADENCE`: `tick` (unset or empty) or `continuous`; anything else is a ConfigError naming it. */
export function cadenceFromEnv(env: Record<string, string | undefined>): Cadence {
  const raw = env[CADENCE_VARIABLE]?.trim();
  if (!raw) return 'tick';
  if (raw === 'tick' || raw === 'continuous') return raw;
  throw new ConfigError([
    { variable: CADENCE_VARIABLE, message: `must be tick or continuous (got "${raw}")` },
  ]);
}

/** The tick function's timeout in serverless.yml; the queue's visibility timeout is a little longer. */
export const TICK_TIMEOUT_MS = 10_000;
export const TICK_VISIBILITY_TIMEOUT_MS = 12_000;

/** The tick period (the queue's delay): SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS, 10 s when unset or not a whole number. */
export function tickPeriodMs(env: Record<string, string | undefined>): number {
  const raw = env.SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS?.trim() ?? '';
  return /^\d+$/.test(raw) && Number(raw) >= 1 ? Number(raw) * 1000 : 10_000;
}

export interface LocalDeploymentOptions {
  /** The functions' environment (their configuration). */
  env: Record<string, string | undefined>;
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
   * pod-sync's reserved concurrency, as `podSyncConcurrency` in serverless.yml
   * (default {@link DEFAULT_POD_SYNC_CONCURRENCY}): pod events beyond it wait
   * in the runtime's queue. `unlimited` starts every delivery at once.
   */
  podSyncConcurrency?: PodSyncConcurrency;
  onResult?: (invocation: RuntimeInvocation, result: InvocationResult) => void;
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
 * pod-watch publishes to. Used by `npm start` and the pipeline tests.
 */
export class LocalDeployment {
  readonly runtime: LocalLambdaRuntime;
  readonly bus: LocalEventBus;
  readonly cadence: Cadence;
  /** The tick chain (tick cadence only). */
  readonly tickChain: TickChain | undefined;
  private readonly schedules: Array<{ stop(): void }> = [];
  private readonly rateMs: number;

  constructor(options: LocalDeploymentOptions) {
    const timeoutMs = options.timeoutMs ?? 130_000;
    this.cadence = options.cadence ?? 'tick';
    this.rateMs = options.rateMs ?? 60_000;
    this.runtime = new LocalLambdaRuntime(options.onResult ? { onResult: options.onResult } : {});
    this.bus = new LocalEventBus({
      retries: options.syncRetries ?? 5,
      retryDelayMs: options.syncRetryDelayMs ?? 2_000,
    });
    const publisher = createLocalBusPublisher(this.bus);
    if (this.cadence === 'tick') {
      const queue = new LocalSqsQueue({
        delayMs: tickPeriodMs(options.env),
        visibilityTimeoutMs: TICK_VISIBILITY_TIMEOUT_MS,
      });
      const handler = createTickHandler(options.env, { queue: createLocalTickQueue(queue), publisher });
      this.runtime.register({ name: 'tick', handler, timeoutMs: TICK_TIMEOUT_MS });
      const source = new QueueEventSource({
        queue,
        queueName: 'tick.fifo',
        runtime: this.runtime,
        functionName: 'tick',
      });
      this.tickChain = { queue, source };
    } else {
      this.tickChain = undefined;
      const heartbeat = createHeartbeatHandler(options.env);
      const podWatch = createPodWatchHandler(options.env, { publisher });
      const podStatus = createPodStatusHandler(options.env);
      this.runtime.register({ name: 'heartbeat', handler: heartbeat, timeoutMs });
      this.runtime.register({ name: 'pod-watch', handler: podWatch, timeoutMs });
      this.runtime.register({ name: 'pod-status', handler: podStatus, timeoutMs });
      this.runtime.register({ name: 'reconcile', handler: createReconcileHandler(options.env), timeoutMs });
    }
    const podSync = createPodSyncHandler(options.env);
    const podSyncConcurrency = options.podSyncConcurrency ?? DEFAULT_POD_SYNC_CONCURRENCY;
    this.runtime.register({
      name: 'pod-sync',
      handler: podSync,
      timeoutMs: 60_000,
      ...(podSyncConcurrency === 'unlimited' ? {} : { reservedConcurrency: podSyncConcurrency }),
    });
    this.bus.addRule({
      name: 'pod-sync',
      pattern: { source: [POD_EVENT_SOURCE], 'detail-type': [POD_EVENT_DETAIL_TYPE] },
      target: this.runtime.asTarget('pod-sync'),
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

  /** Stops the loops; running invocations are crashed when `abortRunning`, else awaited. */
  async stop(options: { abortRunning?: boolean } = {}): Promise<void> {
    for (const s of this.schedules.splice(0)) s.stop();
    const polling = this.tickChain?.source.stop();
    await this.runtime.stopAll(options);
    await polling;
    await this.bus.whenIdle();
  }
}
