import { randomBytes, randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import { type Clock, systemClock } from '../clock.ts';
import { INVOCATION_SIGNAL, type SignalledContext } from './invocation-scope.ts';

/** The account id in every local ARN and event: obviously not a real account. */
export const LOCAL_ACCOUNT_ID = '000000000000';
export const LOCAL_REGION = 'us-east-1';

export interface LambdaContextOptions {
  functionName: string;
  /** The function's configured timeout; the deadline is `clock.now() + timeoutMs` unless `deadlineMs` is given. */
  timeoutMs: number;
  memoryMb?: number;
  /** Defaults to a random UUID, as Lambda's request ids are. */
  requestId?: string;
  /** Time source of the deadline and of `getRemainingTimeInMillis`. Defaults to the system clock. */
  clock?: Clock;
  region?: string;
  accountId?: string;
  /** Epoch-ms deadline, when the invocation started elsewhere (the child-process mode passes it on). */
  deadlineMs?: number;
  /** Exposed to handlers through `invocationSignal(context)`. */
  signal?: AbortSignal;
}

/** Thrown into an invocation's signal when its deadline passes, worded like Lambda's own log line. */
export class LambdaTimeoutError extends Error {
  override name = 'LambdaTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
  }
}

/** Thrown into an invocation's signal when a test kills its sandbox. */
export class SandboxCrashedError extends Error {
  override name = 'SandboxCrashedError';
  constructor(message = 'sandbox crashed (injected)') {
    super(message);
  }
}

/**
 * An asynchronous invocation that never ran because the runtime was stopped
 * (`stopAll({ abortRunning: true })`): like invoking a function that no
 * longer exists, which EventBridge does not retry (`retryable` is false, and
 * the local bus dead-letters it at once).
 */
export class FunctionStoppedError extends Error {
  override name = 'FunctionStoppedError';
  readonly retryable = false;
  constructor(functionName: string) {
    super(`${functionName}: the local runtime was stopped before this asynchronous invocation started`);
  }
}

function deprecated(name: string): never {
  throw new Error(
    `context.${name}() is the deprecated callback API; return a promise from the handler instead`,
  );
}

/** `2026/11/21/[$LATEST]` plus 32 hex digits: the shape of Lambda's log stream names. */
function logStreamName(nowMs: number): string {
  const day = new Date(nowMs).toISOString().slice(0, 10).replaceAll('-', '/');
  return `${day}/[$LATEST]${randomBytes(16).toString('hex')}`;
}

/**
 * Builds a context with every field the Node.js runtime provides
 * (`@types/aws-lambda` `Context`). `getRemainingTimeInMillis()` counts down to
 * the deadline on the injected clock and never goes below 0, like Lambda's.
 * The deprecated `done`/`fail`/`succeed` throw: our handlers are async and a
 * call to them is a bug.
 */
export function createLambdaContext(options: LambdaContextOptions): SignalledContext {
  const clock = options.clock ?? systemClock;
  const region = options.region ?? LOCAL_REGION;
  const now = clock.now();
  const deadline = options.deadlineMs ?? now + options.timeoutMs;
  const context: SignalledContext = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${options.accountId ?? LOCAL_ACCOUNT_ID}:function:${options.functionName}`,
    memoryLimitInMB: String(options.memoryMb ?? 256),
    awsRequestId: options.requestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: logStreamName(now),
    getRemainingTimeInMillis: () => Math.max(0, deadline - clock.now()),
    done: () => deprecated('done'),
    fail: () => deprecated('fail'),
    succeed: () => deprecated('succeed'),
  };
  if (options.signal) {
    // Not enumerable: loggers that dump the context must not walk into the signal.
    Object.defineProperty(context, INVOCATION_SIGNAL, { value: options.signal, enumerable: false });
  }
  return context;
}

/** EventBridge writes times to the second: `2026-11-21T04:46:00Z`. */
export function eventTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

export interface ScheduledEventOptions {
  /** The rule's name; its ARN is built from it unless `ruleArn` is given. */
  ruleName?: string;
  ruleArn?: string;
  /** The scheduled time, epoch ms or Date; defaults to now. Written to the second. */
  time?: number | Date;
  region?: string;
  account?: string;
  /** Defaults to a random UUID. */
  id?: string;
}

/**
 * The event an EventBridge schedule rule sends to its Lambda target, field for
 * field and in the same key order as AWS's published example:
 * `{ version: '0', id, 'detail-type': 'Scheduled Event', source: 'aws.events',
 * account, time, region, resources: [ruleArn], detail: {} }`.
 */
export function scheduledEvent(options: ScheduledEventOptions = {}): ScheduledEvent<Record<string, never>> {
  const region = options.region ?? LOCAL_REGION;
  const account = options.account ?? LOCAL_ACCOUNT_ID;
  const ruleArn =
    options.ruleArn ?? `arn:aws:events:${region}:${account}:rule/${options.ruleName ?? 'local-schedule'}`;
  const time = options.time instanceof Date ? options.time.getTime() : (options.time ?? Date.now());
  return {
    version: '0',
    id: options.id ?? randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account,
    time: eventTime(time),
    region,
    resources: [ruleArn],
    detail: {},
  };
}
