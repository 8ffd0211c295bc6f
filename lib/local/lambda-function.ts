import type { Context } from 'aws-lambda';
import type { FunctionStoppedError, LambdaTimeoutError, SandboxCrashedError } from './lambda-context.ts';

/**
 * A real exported handler (a middy handler or a plain async function). The
 * event is typed `never` so that a handler of any event type can be
 * registered; the runtime passes it whatever JSON the caller invokes with, as
 * Lambda does. Callback-style handlers are not supported. Pass a handler
 * declared on its own (as `functions/` modules export them): a middy chain
 * written inline in `register({...})` infers its event type from this `never`.
 */
export type LambdaHandler = (event: never, context: Context) => unknown;

interface FunctionBase {
  name: string;
  /** The function's configured timeout (Lambda's `timeout`, in ms here). */
  timeoutMs: number;
  memoryMb?: number;
  /**
   * Lambda's `reservedConcurrency`: at most this many asynchronous invocations
   * (bus deliveries, schedules) run at once; more wait in the function's FIFO
   * queue, as throttled events wait in Lambda's asynchronous event queue, and
   * start as invocations finish. A positive whole number; undefined = unlimited.
   */
  reservedConcurrency?: number;
}

/** Runs in this process: module state is shared between invocations, like one warm sandbox. */
export interface InProcessFunction extends FunctionBase {
  mode?: 'in-process';
  handler: LambdaHandler;
}

/**
 * Runs each invocation in a freshly forked process (a cold start every time),
 * so that a timeout or crash is a real SIGKILL. Event, result and error cross
 * the boundary as JSON; the runtime's clock must be the system clock.
 */
export interface ChildProcessFunction extends FunctionBase {
  mode: 'child-process';
  /** File path or file URL of the handler module. */
  module: string | URL;
  /** Defaults to `handler`. */
  exportName?: string;
  /** Added to this process's environment: the function's configuration. */
  env?: Record<string, string>;
}

export type LambdaFunctionDefinition = InProcessFunction | ChildProcessFunction;

/** How one invocation ended, as the caller (EventBridge, the test) sees it. */
export type InvocationResult =
  | { status: 'ok'; result: unknown }
  | { status: 'error'; error: unknown }
  | { status: 'timeout'; error: LambdaTimeoutError }
  | { status: 'crashed'; error: SandboxCrashedError };

/**
 * How an asynchronous invocation ended: as {@link InvocationResult} once it
 * started, or `dropped` when the runtime stopped before it could start (or
 * was stopped when it arrived).
 */
export type AsyncInvocationResult = InvocationResult | { status: 'dropped'; error: FunctionStoppedError };

/** A running (or finished) invocation. */
export interface Invocation {
  readonly requestId: string;
  readonly functionName: string;
  readonly context: Context;
  /** Aborts at the deadline and on crash; also reachable from the handler via `invocationSignal(context)`. */
  readonly signal: AbortSignal;
  /** Never rejects. */
  readonly done: Promise<InvocationResult>;
  /** Kills the sandbox now: the caller gets `crashed`. No effect once finished. */
  crash(message?: string): void;
}

export interface InvokeOptions {
  requestId?: string;
  /** Crash the invocation this long after it starts (on the runtime's clock), unless it finished. */
  crashAfterMs?: number;
}

export interface ScheduleOptions {
  /** Time between invocations, like `rate(1 minute)`. */
  rateMs: number;
  /** Defaults to a scheduled event of rule `<function>-schedule` at the firing time. */
  eventFactory?: (timeMs: number) => unknown;
  ruleName?: string;
  /** Fire once at once, then every `rateMs` (EventBridge itself first fires within one period). */
  startImmediately?: boolean;
}
