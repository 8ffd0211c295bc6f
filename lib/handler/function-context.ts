import type { Context } from 'aws-lambda';
import type { BaseDependencies, Dependencies } from '../app/dependencies.ts';
import type { Invocation } from '../invocation.ts';

/**
 * The Lambda context as the middlewares of lib/handler leave it for the ones
 * after them and for the handler. Optional, because Lambda passes a plain
 * context: each field is set by the middleware named beside it.
 */
export interface FunctionContext<TEvent = unknown, D extends BaseDependencies = Dependencies>
  extends Context {
  /** The cold start's dependencies ({@link coldStartDependencies}): the provider's too unless the function never calls it. */
  deps?: D;
  /** This invocation's id, deadline and abort signal ({@link coldStartDependencies}). */
  invocation?: Invocation;
  /** The trigger's event, parsed ({@link validEvent}). */
  trigger?: { event: TEvent };
}

/** A middleware ran before the one that sets what it reads: a wiring mistake, not bad input. */
export class MiddlewareOrderError extends Error {
  override readonly name = 'MiddlewareOrderError';
}

/**
 * The dependencies and invocation set by coldStartDependencies.
 * @throws MiddlewareOrderError when it has not run yet.
 */
export function invocationScope<D extends BaseDependencies = Dependencies>(
  context: FunctionContext<unknown, D>,
): { deps: D; invocation: Invocation } {
  const { deps, invocation } = context;
  if (!deps || !invocation) {
    throw new MiddlewareOrderError('coldStartDependencies must run before this middleware or handler');
  }
  return { deps, invocation };
}
