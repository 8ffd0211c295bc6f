import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../clock.ts';
import { outsideDeadline } from '../deadline.ts';
import { Fifo } from './fifo.ts';
import {
  createLambdaContext,
  FunctionStoppedError,
  LambdaTimeoutError,
  LOCAL_ACCOUNT_ID,
  LOCAL_REGION,
  SandboxCrashedError,
  scheduledEvent,
} from './lambda-context.ts';
import type {
  AsyncInvocationResult,
  Invocation,
  InvocationResult,
  InvokeOptions,
  LambdaFunctionDefinition,
  ScheduleOptions,
} from './lambda-function.ts';
import { startInChildProcess, startInProcess, viaJson } from './sandbox.ts';

export { guardDependency, InvocationAbortedError, invocationSignal } from './invocation-scope.ts';
export {
  createLambdaContext,
  FunctionStoppedError,
  type LambdaContextOptions,
  LambdaTimeoutError,
  SandboxCrashedError,
  scheduledEvent,
} from './lambda-context.ts';

export type {
  AsyncInvocationResult,
  ChildProcessFunction,
  InProcessFunction,
  Invocation,
  InvocationResult,
  InvokeOptions,
  LambdaFunctionDefinition,
  LambdaHandler,
  ScheduleOptions,
} from './lambda-function.ts';

export interface LocalLambdaRuntimeOptions {
  /**
   * Time source of deadlines, `crashAfterMs` and schedules. Its `sleep` must
   * really wait for the clock to reach the time (a clock whose sleep returns at
   * once would time every invocation out at once). Defaults to the system clock.
   */
  clock?: Clock;
  region?: string;
  accountId?: string;
  /** Called once per finished invocation: for `npm start` to log, for tests to collect. */
  onResult?: (invocation: Invocation, result: InvocationResult) => void;
}

export class UnknownFunctionError extends Error {
  override name = 'UnknownFunctionError';
}

const noop = () => {};

/** An asynchronous invocation waiting for a free slot of its function's reserved concurrency. */
interface Queued {
  payload: unknown;
  options: InvokeOptions;
  resolve: (result: AsyncInvocationResult) => void;
}

/**
 * Runs the real handlers as Lambda would, with the failure modes that later
 * tests inject.
 *
 * - Concurrency: invocations of one function run at once; nothing serialises
 *   them. A function with `reservedConcurrency` runs at most that many
 *   asynchronous invocations ({@link invokeAsync}, bus targets, schedules) at
 *   once; the others wait in its FIFO queue without a deadline, as throttled
 *   events wait in Lambda's asynchronous event queue (where throttling does not
 *   use up the function's retry attempts), and each gets its full timeout when
 *   it starts. Direct {@link invoke} calls are never throttled: they model a
 *   test calling the handler, not Lambda's Invoke API; they do take a slot.
 *   Unlike Lambda, queued events do not expire (`maximumEventAge`).
 * - Timeout: at the deadline the caller gets `timeout` and the invocation's
 *   signal aborts with {@link LambdaTimeoutError}. In process, a promise cannot
 *   be killed: the handler keeps running until it checks the signal, and only
 *   dependencies wrapped with `guardDependency` are cut off for it. Whatever it
 *   does afterwards is ignored by the runtime (its result is discarded) but is
 *   NOT prevented; lib loops must check the signal before each write. Use the
 *   `child-process` mode where a test needs the sandbox truly gone.
 * - Crash: `crash()` or `crashAfterMs` behave like a SIGKILL of the sandbox,
 *   with the same in-process limits (and the same remedy) as a timeout.
 * - Warm state: in-process, module state (clients built at cold start) is
 *   shared by all invocations, like one warm sandbox reused forever. Lambda
 *   would also start fresh sandboxes and reset one after a timeout; the
 *   `child-process` mode gives a cold start every time.
 */
export class LocalLambdaRuntime {
  readonly #functions = new Map<string, LambdaFunctionDefinition>();
  readonly #running = new Map<string, Set<Invocation>>();
  readonly #queues = new Map<string, Fifo<Queued>>();
  /** Asynchronous invocations not yet finished, queued or running: what a graceful `stopAll` waits for. */
  readonly #pending = new Set<Promise<AsyncInvocationResult>>();
  #closed = false;
  readonly #schedules = new Set<AbortController>();
  readonly #exits = new Set<Promise<void>>();
  readonly #clock: Clock;
  readonly #region: string;
  readonly #accountId: string;
  readonly #onResult: LocalLambdaRuntimeOptions['onResult'];

  constructor(options: LocalLambdaRuntimeOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#region = options.region ?? LOCAL_REGION;
    this.#accountId = options.accountId ?? LOCAL_ACCOUNT_ID;
    this.#onResult = options.onResult;
  }

  register(definition: LambdaFunctionDefinition): void {
    if (!(definition.timeoutMs > 0)) throw new RangeError(`${definition.name}: timeoutMs must be positive`);
    const reserved = definition.reservedConcurrency;
    if (reserved !== undefined && !(Number.isInteger(reserved) && reserved > 0)) {
      throw new RangeError(`${definition.name}: reservedConcurrency must be a positive whole number`);
    }
    this.#functions.set(definition.name, definition);
    if (!this.#running.has(definition.name)) this.#running.set(definition.name, new Set());
    if (!this.#queues.has(definition.name)) this.#queues.set(definition.name, new Fifo());
    // A raised limit lets queued invocations start now.
    this.#startQueued(definition.name);
  }

  /**
   * Starts an invocation and returns at once; await `done` for its outcome.
   * Never throttled (see the class comment); use {@link invokeAsync} for
   * what Lambda invokes asynchronously.
   */
  invoke(name: string, event: unknown, options: InvokeOptions = {}): Invocation {
    const fn = this.#definition(name);
    const payload = viaJson(event ?? {});
    const requestId = options.requestId ?? randomUUID();
    const abort = new AbortController();
    const timers = new AbortController();
    const context = createLambdaContext({
      functionName: name,
      timeoutMs: fn.timeoutMs,
      memoryMb: fn.memoryMb,
      requestId,
      clock: this.#clock,
      region: this.#region,
      accountId: this.#accountId,
      signal: abort.signal,
    });
    let resolveDone: (result: InvocationResult) => void = noop;
    const done = new Promise<InvocationResult>((resolve) => {
      resolveDone = resolve;
    });
    const running = this.#running.get(name) ?? new Set();
    let finished = false;
    let release = noop;
    const finish = (result: InvocationResult) => {
      if (finished) return;
      finished = true;
      timers.abort();
      release();
      running.delete(invocation);
      resolveDone(result);
      // Before the callback, so that a throwing onResult cannot stall the queue.
      this.#startQueued(name);
      this.#onResult?.(invocation, result);
    };
    // The signal aborts before the caller can observe the outcome.
    const stop = (result: Extract<InvocationResult, { error: Error }>) => {
      if (finished) return;
      abort.abort(result.error);
      finish(result);
    };
    const invocation: Invocation = {
      requestId,
      functionName: name,
      context,
      signal: abort.signal,
      done,
      crash: (message) => stop({ status: 'crashed', error: new SandboxCrashedError(message) }),
    };
    running.add(invocation);

    this.#clock
      .sleep(fn.timeoutMs, timers.signal)
      .then(() => stop({ status: 'timeout', error: new LambdaTimeoutError(fn.timeoutMs) }), noop);
    if (options.crashAfterMs !== undefined) {
      this.#clock.sleep(options.crashAfterMs, timers.signal).then(() => invocation.crash(), noop);
    }

    const sandbox =
      fn.mode === 'child-process'
        ? startInChildProcess(fn, payload, context, {
            deadlineMs: this.#clock.now() + context.getRemainingTimeInMillis(),
            region: this.#region,
            accountId: this.#accountId,
          })
        : // A new invocation, not a continuation of the caller's (see outsideDeadline).
          outsideDeadline(() => startInProcess(fn, payload, context, abort.signal));
    release = sandbox.kill;
    this.#exits.add(sandbox.exited);
    sandbox.exited.then(() => this.#exits.delete(sandbox.exited));
    sandbox.outcome.then(finish);
    return invocation;
  }

  /**
   * Invokes `name` asynchronously (Lambda's `InvocationType: Event`, as
   * EventBridge and schedules do): at once when the function is below its
   * reserved concurrency, else after the invocations queued before it. The
   * event is copied now, as Lambda stores the event when it accepts it.
   * Resolves with the outcome once the invocation ran, or `dropped` when the
   * runtime stopped first; never rejects.
   */
  invokeAsync(name: string, event: unknown, options: InvokeOptions = {}): Promise<AsyncInvocationResult> {
    this.#definition(name);
    const payload = viaJson(event ?? {});
    if (this.#closed) return Promise.resolve({ status: 'dropped', error: new FunctionStoppedError(name) });
    const queue = this.#queues.get(name) ?? new Fifo();
    const result = new Promise<AsyncInvocationResult>((resolve) => {
      queue.push({ payload, options, resolve });
    });
    this.#pending.add(result);
    void result.then(() => this.#pending.delete(result));
    this.#startQueued(name);
    return result;
  }

  /** How many asynchronous invocations of `name` wait for a free slot. */
  queuedCount(name: string): number {
    return this.#queues.get(name)?.length ?? 0;
  }

  /** How many invocations of `name` have not finished. */
  runningCount(name: string): number {
    return this.#running.get(name)?.size ?? 0;
  }

  /** The unfinished invocations of `name`, oldest first. */
  running(name: string): Invocation[] {
    return [...(this.#running.get(name) ?? [])];
  }

  /**
   * An event-bus target that invokes `name` as EventBridge invokes a Lambda
   * target, asynchronously ({@link invokeAsync}): resolves with the result,
   * rejects on error, timeout or crash (so the bus's retries and dead-letter
   * list apply), and with a non-retryable {@link FunctionStoppedError} when the
   * runtime stopped before the invocation started. Waiting in the queue is not
   * a failure: the bus sees nothing until the invocation ran.
   */
  asTarget(name: string): (event: unknown) => Promise<unknown> {
    this.#definition(name);
    return async (event) => {
      const result = await this.invokeAsync(name, event);
      if (result.status === 'ok') return result.result;
      throw result.error;
    };
  }

  /**
   * Invokes `name` every `rateMs` with a scheduled event, like an EventBridge
   * schedule rule: invocations are not awaited and may overlap.
   */
  schedule(name: string, options: ScheduleOptions): { stop(): void } {
    this.#definition(name);
    if (!(options.rateMs > 0)) throw new RangeError('rateMs must be positive');
    const control = new AbortController();
    this.#schedules.add(control);
    const fire = () => {
      const now = this.#clock.now();
      const event = options.eventFactory
        ? options.eventFactory(now)
        : scheduledEvent({
            ruleName: options.ruleName ?? `${name}-schedule`,
            time: now,
            region: this.#region,
            account: this.#accountId,
          });
      void this.invokeAsync(name, event);
    };
    const loop = async () => {
      if (options.startImmediately) fire();
      for (;;) {
        await this.#clock.sleep(options.rateMs, control.signal);
        fire();
      }
    };
    // Aborting the sleep ends the loop; anything else (a throwing eventFactory) must surface.
    loop().catch((error: unknown) => {
      if (!control.signal.aborted) throw error;
    });
    return {
      stop: () => {
        control.abort();
        this.#schedules.delete(control);
      },
    };
  }

  /**
   * Stops every schedule, then waits for the running invocations and the
   * queued asynchronous ones to finish (each is bounded by its timeout once it
   * starts), and for every forked child process to exit.
   *
   * With `abortRunning` it is the end of the runtime: queued asynchronous
   * invocations are dropped without starting and resolve `dropped`, running
   * ones are crashed, and later asynchronous invocations are dropped at once
   * (so a bus stops retrying into it). Direct {@link invoke} still works.
   */
  async stopAll(options: { abortRunning?: boolean } = {}): Promise<void> {
    for (const control of this.#schedules) control.abort();
    this.#schedules.clear();
    if (options.abortRunning) {
      this.#closed = true;
      for (const [name, queue] of this.#queues) {
        for (const queued of queue.drain()) {
          queued.resolve({ status: 'dropped', error: new FunctionStoppedError(name) });
        }
      }
    }
    const all = [...this.#running.values()].flatMap((set) => [...set]);
    if (options.abortRunning) for (const invocation of all) invocation.crash('runtime stopped');
    await Promise.all(all.map((invocation) => invocation.done));
    // Queued invocations start as the running ones finish: wait for those too.
    await Promise.all([...this.#pending]);
    await Promise.all(this.#exits);
  }

  /** Starts queued invocations of `name` while it has free slots, oldest first. */
  #startQueued(name: string): void {
    const fn = this.#functions.get(name);
    const queue = this.#queues.get(name);
    const running = this.#running.get(name);
    if (!fn || !queue || !running) return;
    const limit = fn.reservedConcurrency ?? Number.POSITIVE_INFINITY;
    while (running.size < limit) {
      const queued = queue.shift();
      if (!queued) return;
      this.invoke(name, queued.payload, queued.options).done.then(queued.resolve);
    }
  }

  #definition(name: string): LambdaFunctionDefinition {
    const fn = this.#functions.get(name);
    if (!fn) throw new UnknownFunctionError(`no function registered as ${name}`);
    return fn;
  }
}
