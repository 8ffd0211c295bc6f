import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../clock.ts';
import {
  createLambdaContext,
  LambdaTimeoutError,
  LOCAL_ACCOUNT_ID,
  LOCAL_REGION,
  SandboxCrashedError,
  scheduledEvent,
} from './lambda-context.ts';
import type {
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
  type LambdaContextOptions,
  LambdaTimeoutError,
  SandboxCrashedError,
  scheduledEvent,
} from './lambda-context.ts';

export type {
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

/**
 * Runs the real handlers as Lambda would, with the failure modes that later
 * tests inject.
 *
 * - Concurrency: invocations of one function run at once; nothing serialises them.
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
    this.#functions.set(definition.name, definition);
    if (!this.#running.has(definition.name)) this.#running.set(definition.name, new Set());
  }

  /** Starts an invocation and returns at once; await `done` for its outcome. */
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
        : startInProcess(fn, payload, context, abort.signal);
    release = sandbox.kill;
    this.#exits.add(sandbox.exited);
    sandbox.exited.then(() => this.#exits.delete(sandbox.exited));
    sandbox.outcome.then(finish);
    return invocation;
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
   * target: resolves with the result, rejects on error, timeout or crash (so
   * the bus's retries and dead-letter list apply).
   */
  asTarget(name: string): (event: unknown) => Promise<unknown> {
    this.#definition(name);
    return async (event) => {
      const result = await this.invoke(name, event).done;
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
      this.invoke(name, event);
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
   * Stops every schedule, then waits for the running invocations to finish
   * (each is bounded by its timeout), or crashes them first with `abortRunning`,
   * and for every forked child process to exit.
   */
  async stopAll(options: { abortRunning?: boolean } = {}): Promise<void> {
    for (const control of this.#schedules) control.abort();
    this.#schedules.clear();
    const all = [...this.#running.values()].flatMap((set) => [...set]);
    if (options.abortRunning) for (const invocation of all) invocation.crash('runtime stopped');
    await Promise.all(all.map((invocation) => invocation.done));
    await Promise.all(this.#exits);
  }

  #definition(name: string): LambdaFunctionDefinition {
    const fn = this.#functions.get(name);
    if (!fn) throw new UnknownFunctionError(`no function registered as ${name}`);
    return fn;
  }
}
