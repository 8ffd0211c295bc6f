import type middy from '@middy/core';
import type { Dependencies } from '../app/dependencies.ts';
import { invocationOf } from '../invocation.ts';
import type { FunctionContext } from './function-context.ts';

/** Builds a cold start's dependencies; `functionName` names the function in every log line. */
export type DependencyLoader = (functionName: string) => Promise<Dependencies>;

/**
 * Builds the dependencies once per cold start (at the first invocation, not
 * at import, so that importing a handler reads no configuration), and on
 * every invocation sets `context.deps` and `context.invocation`. Concurrent
 * first invocations share one build; a failed build fails its invocations
 * and is tried again by the next one. The first invocation that gets the
 * dependencies reports the cold start (the `ColdStart` metric), once per
 * execution environment.
 */
export function coldStartDependencies(
  load: DependencyLoader,
): middy.MiddlewareObj<unknown, unknown, Error, FunctionContext> {
  let loading: Promise<Dependencies> | undefined;
  let coldStartReported = false;
  const once = (functionName: string): Promise<Dependencies> => {
    loading ??= load(functionName).catch((err: unknown) => {
      loading = undefined;
      throw err;
    });
    return loading;
  };
  return {
    name: 'coldStartDependencies',
    before: async (request) => {
      const deps = await once(request.context.functionName);
      if (!coldStartReported) {
        coldStartReported = true;
        deps.metrics.coldStart(request.context.functionName);
      }
      request.context.deps = deps;
      request.context.invocation = invocationOf(request.context, deps.clock);
    },
  };
}
