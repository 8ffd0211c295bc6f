import type { Context } from 'aws-lambda';
import type { Clock } from './clock.ts';

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
}

/** Reads the invocation's id, deadline and abort signal from a Lambda context. */
export function invocationOf(context: Context, clock: Clock): Invocation {
  const remaining = Math.max(0, Math.floor(context.getRemainingTimeInMillis()));
  const timeout = AbortSignal.timeout(remaining);
  const local: unknown = (context as Context & Record<symbol, unknown>)[INVOCATION_SIGNAL];
  return {
    requestId: context.awsRequestId,
    functionName: context.functionName,
    deadline: clock.monotonic() + remaining,
    signal: local instanceof AbortSignal ? AbortSignal.any([local, timeout]) : timeout,
  };
}
