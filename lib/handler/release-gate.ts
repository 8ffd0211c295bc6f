import type middy from '@middy/core';
import type { BaseDependencies, Dependencies } from '../app/dependencies.ts';
import { runWithDeadline } from '../deadline.ts';
import { type Invocation, invocationLog } from '../invocation.ts';
import { type ReleaseRefused, releaseGateOf } from '../release/gate.ts';
import { type FunctionContext, invocationScope } from './function-context.ts';

export interface ReleaseGateMiddlewareOptions {
  /**
   * The reconciler does not wait for a reconciler of its own release (it is
   * the one that brings the state up to it); every other function does.
   */
  reconciler?: boolean;
}

/**
 * Whether this release may act under the reconciler status (see
 * ReleaseGate: it records the release, then reads the status): undefined
 * when it may, else the refusal to return, with why logged. For a function
 * that gates only part of its work, the same check the middleware makes.
 * Its reads are aborted at the invocation's deadline (lib/deadline.ts).
 * @throws what the state table throws when the gate cannot be read.
 */
export async function releaseRefusal(
  deps: BaseDependencies,
  invocation: Invocation,
  options: ReleaseGateMiddlewareOptions = {},
): Promise<ReleaseRefused | undefined> {
  const decision = await runWithDeadline(invocation.signal, () =>
    releaseGateOf(deps, options).check(invocation.functionName),
  );
  if (decision.act) return undefined;
  invocationLog(deps.log, invocation).warn(
    { release: deps.config.release, reason: decision.reason },
    'release may not act under the reconciler status: doing nothing',
  );
  return { refused: true, release: deps.config.release, reason: decision.reason };
}

/**
 * Lets the invocation go on only if this release may act
 * ({@link releaseRefusal}); otherwise ends it with the refusal as its result,
 * without running the handler or anything after this middleware. A gate that
 * cannot be read (DynamoDB unreachable) fails the invocation.
 */
export function releaseGate<D extends BaseDependencies = Dependencies>(
  options: ReleaseGateMiddlewareOptions = {},
): middy.MiddlewareObj<unknown, unknown, Error, FunctionContext<unknown, D>> {
  return {
    name: 'releaseGate',
    before: (request) => {
      const { deps, invocation } = invocationScope(request.context);
      return releaseRefusal(deps, invocation, options);
    },
  };
}
