import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context } from 'aws-lambda';
import { errorMessage } from '../util/error-message.ts';

/**
 * Where the local runtime hangs an invocation's abort signal on the Lambda
 * context. A registered symbol, so that two copies of this module (bundled and
 * not) agree on it.
 */
export const INVOCATION_SIGNAL: unique symbol = Symbol.for('serverless-virtual-kubelet.invocationSignal');

/** A Lambda context that may carry the local runtime's abort signal. */
export type SignalledContext = Context & { [INVOCATION_SIGNAL]?: AbortSignal };

/**
 * The signal that aborts when this invocation must stop acting: at its deadline
 * (the sandbox would be frozen or reset) or when a test crashes it (the sandbox
 * would be killed). Undefined in AWS, where the sandbox simply stops: code
 * should treat "no signal" as "never aborted" and still bound its loops by
 * `context.getRemainingTimeInMillis()`.
 *
 * Loops that write (lease renewal, reconcile, status writes) must check
 * `signal.aborted` before each write; in-process nothing else can stop them.
 */
export function invocationSignal(context: Context): AbortSignal | undefined {
  return (context as SignalledContext)[INVOCATION_SIGNAL];
}

/** What the local runtime knows about the invocation that the current async call chain belongs to. */
export interface InvocationScope {
  readonly functionName: string;
  readonly requestId: string;
  readonly signal: AbortSignal;
}

const storage = new AsyncLocalStorage<InvocationScope>();

/** Runs `fn` so that everything it starts (promises, timers) sees `scope` as the current invocation. */
export function runInInvocation<T>(scope: InvocationScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The invocation whose async call chain is running, or undefined outside the local runtime. */
export function currentInvocation(): InvocationScope | undefined {
  return storage.getStore();
}

/** Thrown by a guarded dependency when the invocation that calls it was aborted (timed out or crashed). */
export class InvocationAbortedError extends Error {
  override name = 'InvocationAbortedError';
  constructor(
    readonly requestId: string,
    readonly reason: unknown,
  ) {
    super(`invocation ${requestId} was aborted (${errorMessage(reason)})`);
  }
}

function throwIfAborted(scope: InvocationScope): void {
  if (scope.signal.aborted) throw new InvocationAbortedError(scope.requestId, scope.signal.reason);
}

/**
 * Wraps a dependency (an SDK client, a Kubernetes API object, an event bus) so
 * that an invocation that was timed out or crashed can no longer use it: every
 * method call made from that invocation's async call chain returns a promise
 * rejected with {@link InvocationAbortedError} once its signal has aborted
 * (without calling the method), and a call that was in flight when it aborted
 * rejects instead of returning its result.
 *
 * This is the closest in-process stand-in for a frozen or killed sandbox, with
 * one deliberate asymmetry that matches AWS: a request already sent may still
 * take effect on the server, but the handler never learns of it. Calls made
 * outside any invocation (test setup, assertions) pass through untouched.
 *
 * Only methods directly on `dep` are guarded (one level); properties that are
 * not functions are returned as they are. Methods are called on the original
 * object, so classes with private fields keep working.
 */
export function guardDependency<T extends object>(dep: T): T {
  return new Proxy(dep, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      return function guarded(...args: unknown[]): unknown {
        const scope = currentInvocation();
        if (!scope) return value.apply(target, args);
        // Dependencies are I/O clients with async methods: refuse the way they fail, by rejecting.
        if (scope.signal.aborted)
          return Promise.reject(new InvocationAbortedError(scope.requestId, scope.signal.reason));
        const result: unknown = value.apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.then(
          (resolved: unknown) => {
            throwIfAborted(scope);
            return resolved;
          },
          (error: unknown) => {
            throwIfAborted(scope);
            throw error;
          },
        );
      };
    },
  });
}
