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

/**
 * Runs `fn` outside every deadline scope, as a new invocation runs: the local
 * Lambda runtime starts each invocation with it, so that an invocation started
 * from another's code (a bus delivery, a queued slot freed by it) does not
 * inherit that invocation's deadline.
 */
export function outsideDeadline<T>(fn: () => T): T {
  return scope.exit(fn);
}

/** The deadline signal of the current scope, if any. */
export function currentDeadline(): AbortSignal | undefined {
  return scope.getStore();
}

/**
 * {@link runWithDeadline} with a deadline `ms` from now, whose timer is
 * cleared as soon as `fn` settles (an `AbortSignal.timeout` would stay armed
 * until it fires, one per call).
 */
export async function runWithTimeout<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')),
    Math.max(0, ms),
  );
  timer.unref?.();
  try {
    return await runWithDeadline(controller.signal, fn);
  } finally {
    clearTimeout(timer);
  }
}
