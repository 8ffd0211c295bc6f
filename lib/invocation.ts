import type { Context } from 'aws-lambda';
import type { Clock } from './clock.ts';
import { type LambdaLogFields, lambdaLogFields } from './log/lambda-fields.ts';
import type { Logger } from './log/logger.ts';

/** The same registered symbol the local runtime (lib/local) hangs its abort signal on. */
const INVOCATION_SIGNAL = Symbol.for('serverless-virtual-kubelet.invocationSignal');

/** What a lib entry point needs to know about the Lambda invocation it runs in. */
export interface Invocation {
  requestId: string;
  functionName: string;
  /** Monotonic time (clock.monotonic()) of the invocation's deadline. */
  deadline: number;
  /**
   * Aborts at the deadline, and when the local runtime crashes or times out
   * the invocation. Loops check it before each write.
   */
  signal: AbortSignal;
  /**
   * The Lambda fields of its log lines (lib/log/lambda-fields.ts); absent
   * when an invocation is made up without a Lambda context (tests, benches).
   */
  logFields?: LambdaLogFields;
}

/** How this invocation came about, beside its Lambda context. */
export interface InvocationStart {
  /** Whether this invocation built the function's dependencies. */
  coldStart: boolean;
  /** The runtime's X-Ray trace header of this invocation (`_X_AMZN_TRACE_ID`), if any. */
  traceHeader?: string;
}

/** Reads the invocation's id, deadline, abort signal and log fields from a Lambda context. */
export function invocationOf(context: Context, clock: Clock, start: InvocationStart): Invocation {
  const remaining = Math.max(0, Math.floor(context.getRemainingTimeInMillis()));
  const timeout = AbortSignal.timeout(remaining);
  const local: unknown = (context as Context & Record<symbol, unknown>)[INVOCATION_SIGNAL];
  return {
    requestId: context.awsRequestId,
    functionName: context.functionName,
    deadline: clock.monotonic() + remaining,
    signal: local instanceof AbortSignal ? AbortSignal.any([local, timeout]) : timeout,
    logFields: lambdaLogFields(context, start.coldStart, start.traceHeader),
  };
}

/** `log` with the invocation's fields on every line: at least its request id, under Powertools' name. */
export function invocationLog(log: Logger, invocation: Invocation): Logger {
  return log.child({ ...(invocation.logFields ?? { function_request_id: invocation.requestId }) });
}
