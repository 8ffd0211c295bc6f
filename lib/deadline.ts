import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The deadline of the invocation a request belongs to, carried through
 * async calls so that every client honours it without each call site
 * passing an abort signal: the AWS clients built by `awsClientOptions`
 * (lib/aws/client-options.ts) and the Kubernetes clients of
 * lib/kube/client.ts abort a request whose invocation reached its deadline
 * (or was killed by the local runtime), instead of letting it outlive the
 * invocation.
 */
const scope = new AsyncLocalStorage<AbortSignal>();

/**
 * Runs `fn` with `signal` as the deadline of every AWS and Kubernetes request it makes,
 * directly or through anything it awaits. Nested scopes combine: a request
 * aborts when either deadline passes.
 */
export function runWithDeadline<T>(signal: AbortSignal, fn: () => T): T {
  const outer = scope.getStore();
  return scope.run(outer ? AbortSignal.any([outer, signal]) : signal, fn);
}

/** The deadline signal of the current scope, if any. */
export function currentDeadline(): AbortSignal | undefined {
  return scope.getStore();
}
