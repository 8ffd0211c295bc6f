import type { Context } from 'aws-lambda';
import { startChildInvocation } from './child-process-invoker.ts';
import { runInInvocation } from './invocation-scope.ts';
import type { ChildProcessFunction, InProcessFunction, InvocationResult } from './lambda-function.ts';

/** One invocation's handler, started in one of the two modes. */
export interface Sandbox {
  /** The handler's own outcome (ok or error); never rejects. */
  outcome: Promise<InvocationResult>;
  /** Ends the sandbox: SIGKILL for a child process, nothing in process (a promise cannot be killed). */
  kill: () => void;
  /** Resolves when nothing of the sandbox is left running: the child has exited. */
  exited: Promise<void>;
}

/** Lambda hands the handler parsed JSON and returns serialised JSON: neither side shares objects. */
export function viaJson(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? null : JSON.parse(text);
}

/** Runs the handler here, inside an invocation scope so that guarded dependencies know whose call it is. */
export function startInProcess(
  fn: InProcessFunction,
  payload: unknown,
  context: Context,
  signal: AbortSignal,
): Sandbox {
  const scope = { functionName: fn.name, requestId: context.awsRequestId, signal };
  const outcome = runInInvocation(scope, () =>
    Promise.resolve().then(() => fn.handler(payload as never, context)),
  ).then(
    (result): InvocationResult => ({ status: 'ok', result: viaJson(result) }),
    (error: unknown): InvocationResult => ({ status: 'error', error }),
  );
  // A result that is not JSON (a BigInt, a cycle) fails in viaJson, as Lambda fails to serialise it.
  return {
    outcome: outcome.catch((error: unknown) => ({ status: 'error', error })),
    kill: () => {},
    exited: Promise.resolve(),
  };
}

/** Runs the handler in a fresh child process whose deadline is `deadlineMs` (epoch ms, system clock). */
export function startInChildProcess(
  fn: ChildProcessFunction,
  payload: unknown,
  context: Context,
  meta: { deadlineMs: number; region: string; accountId: string },
): Sandbox {
  const child = startChildInvocation(
    {
      module: String(fn.module),
      exportName: fn.exportName ?? 'handler',
      event: payload,
      context: {
        functionName: fn.name,
        timeoutMs: fn.timeoutMs,
        memoryMb: fn.memoryMb,
        requestId: context.awsRequestId,
        ...meta,
      },
    },
    fn.env,
  );
  return { outcome: child.outcome, kill: child.kill, exited: child.exited };
}
