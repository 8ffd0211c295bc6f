import type middy from '@middy/core';
import type { BaseDependencies, Dependencies } from '../app/dependencies.ts';
import { invocationOf } from '../invocation.ts';
import type { FunctionContext } from './function-context.ts';

/** Builds a cold start's dependencies; `functionName` names the function in every log line. */
export type DependencyLoader<D extends BaseDependencies = Dependencies> = (
  functionName: string,
) => Promise<D>;

/**
 * Builds the dependencies once per cold start (at the first invocation, not
 * at import, so that importing a handler reads no configuration), and on
 * every invocation sets `context.deps` and `context.invocation`. Concurrent
 * first invocations share one build; a failed build fails its invocations
 * and is tried again by the next one. The invocation that starts a build is
 * the cold start (`cold_start` in its log lines), the others are warm; the
 * first invocation that gets the dependencies sends the `ColdStart` metric,
 * once per execution environment.
 * `env` is the function's environment, where the Lambda runtime puts each
 * invocation's X-Ray trace header (`_X_AMZN_TRACE_ID`).
 */
export function coldStartDependencies<D extends BaseDependencies = Dependencies>(
  load: DependencyLoader<D>,
  env: Record<string, string | undefined> = process.env,
): middy.MiddlewareObj<unknown, unknown, Error, FunctionContext<unknown, D>> {
  let loading: Promise<D> | undefined;
  let coldStartReported = false;
  const once = (functionName: string): Promise<D> => {
    loading ??= load(functionName).catch((err: unknown) => {
      loading = undefined;
      throw err;
    });
    return loading;
  };
  return {
    name: 'coldStartDependencies',
    before: async (request) => {
      const coldStart = loading === undefined;
      const traceHeader = env._X_AMZN_TRACE_ID;
      const deps = await once(request.context.functionName);
      if (!coldStartReported) {
        coldStartReported = true;
        deps.metrics.coldStart(request.context.functionName);
      }
      request.context.deps = deps;
      request.context.invocation = invocationOf(request.context, deps.clock, {
        coldStart,
        ...(traceHeader ? { traceHeader } : {}),
      });
    },
  };
}
