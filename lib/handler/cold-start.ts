import type middy from '@middy/core';
import { type Dependencies, type DependencyOverrides, loadDependencies } from '../app/dependencies.ts';
import { loadConfig } from '../config/config.ts';
import { invocationOf } from '../invocation.ts';
import type { FunctionContext } from './function-context.ts';

/** A function's environment variables. */
export type FunctionEnv = Record<string, string | undefined>;

export interface ColdStartOptions {
  /** Read once, at the first invocation: a bad configuration fails that invocation, naming every problem. */
  env: FunctionEnv;
  /** What a test or `npm start` supplies instead of the defaults. */
  overrides?: Omit<DependencyOverrides, 'functionName'>;
}

/**
 * Builds the dependencies once per cold start (at the first invocation, not
 * at import, so that importing a handler reads no configuration), and on
 * every invocation sets `context.deps` and `context.invocation`. A failed
 * build is retried by the next invocation.
 */
export function coldStartDependencies(
  options: ColdStartOptions,
): middy.MiddlewareObj<unknown, unknown, Error, FunctionContext> {
  let loading: Promise<Dependencies> | undefined;
  const load = (functionName: string) => {
    loading ??= loadDependencies(loadConfig(options.env), { ...options.overrides, functionName }).catch(
      (err: unknown) => {
        loading = undefined;
        throw err;
      },
    );
    return loading;
  };
  return {
    name: 'coldStartDependencies',
    before: async (request) => {
      const deps = await load(request.context.functionName);
      request.context.deps = deps;
      request.context.invocation = invocationOf(request.context, deps.clock);
    },
  };
}
