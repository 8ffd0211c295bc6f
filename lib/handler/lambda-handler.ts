import middy from '@middy/core';
import type { BaseDependencies, Dependencies, DependencyOverrides } from '../app/dependencies.ts';
import type { Config } from '../config/config.ts';
import { loadConfig } from '../config/load-config.ts';
import { runWithDeadline } from '../deadline.ts';
import type { Invocation } from '../invocation.ts';
import type { ReleaseRefused } from '../release/gate.ts';
import { coldStartDependencies } from './cold-start.ts';
import { type FunctionContext, invocationScope, MiddlewareOrderError } from './function-context.ts';
import { type ReleaseGateMiddlewareOptions, releaseGate } from './release-gate.ts';
import { type EventParser, validEvent } from './valid-event.ts';

export interface LambdaHandlerOptions<TEvent, D extends BaseDependencies = Dependencies> {
  /**
   * The function's environment, read once, at the first invocation: a bad
   * configuration fails that invocation (and the next ones), naming every
   * problem, before anything is written.
   */
  env: Record<string, string | undefined>;
  /**
   * The composition root (loadDependencies, or loadBaseDependencies for a
   * function that never calls the provider), named by the handler so that
   * what a function is built from is one step from it; a test may wrap it
   * to supply ports of its own.
   */
  dependencies: (config: Config, overrides: Pick<DependencyOverrides, 'functionName'>) => Promise<D>;
  /** The trigger's event parser ({@link validEvent}). */
  event: EventParser<TEvent>;
  /**
   * The release gate's options, or false for a function that must start
   * without waiting for the gate (its entry point then checks it itself,
   * with releaseRefusal, before the parts that need it).
   */
  gate?: ReleaseGateMiddlewareOptions | false;
}

/** What a handler runs: one lib/ entry point, given the dependencies, the invocation and the parsed event. */
export type EntryPoint<TEvent, TResult, D extends BaseDependencies = Dependencies> = (
  deps: D,
  invocation: Invocation,
  event: TEvent,
) => Promise<TResult>;

/**
 * A Lambda handler in middy's idiom: the middlewares, in order, are
 * {@link coldStartDependencies}, {@link validEvent} and {@link releaseGate}
 * (unless `gate` is false); the handler itself only calls `run`. Metrics
 * need no middleware: each data point is written when it is reported
 * (lib/metrics/emf.ts), so nothing waits for a flush at the end.
 */
export function lambdaHandler<TEvent, TResult, D extends BaseDependencies = Dependencies>(
  options: LambdaHandlerOptions<TEvent, D>,
  run: EntryPoint<TEvent, TResult, D>,
): middy.MiddyfiedHandler<unknown, TResult | ReleaseRefused, Error, FunctionContext<TEvent, D>> {
  const handler = middy<unknown, TResult | ReleaseRefused, Error, FunctionContext<TEvent, D>>()
    .use(
      coldStartDependencies(
        (functionName) => options.dependencies(loadConfig(options.env), { functionName }),
        options.env,
      ),
    )
    .use(validEvent<TEvent, D>(options.event));
  if (options.gate !== false) handler.use(releaseGate<D>(options.gate));
  return handler.handler((_event, context) => {
    const { deps, invocation } = invocationScope(context);
    if (!context.trigger) throw new MiddlewareOrderError('validEvent must run before the handler');
    const { event } = context.trigger;
    // Every AWS and Kubernetes request of the entry point ends at the invocation's deadline.
    return runWithDeadline(invocation.signal, () => run(deps, invocation, event));
  });
}
