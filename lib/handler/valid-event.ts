import type middy from '@middy/core';
import type { BaseDependencies, Dependencies } from '../app/dependencies.ts';
import { invocationLog } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import { type FunctionContext, invocationScope } from './function-context.ts';

/**
 * Parses a trigger's event: returns what the handler acts on, or throws an
 * error naming every bad field (InvalidEventError), which fails the
 * invocation. `log` is the invocation's logger, for a parser that reports
 * the rejection itself.
 */
export type EventParser<TEvent> = (event: unknown, log: Logger) => TEvent;

/**
 * Parses the event once, before the release gate and the handler, so that
 * bad input writes nothing (not even the gate's release record), and sets
 * `context.trigger` to the parsed event.
 */
export function validEvent<TEvent, D extends BaseDependencies = Dependencies>(
  parse: EventParser<TEvent>,
): middy.MiddlewareObj<unknown, unknown, Error, FunctionContext<TEvent, D>> {
  return {
    name: 'validEvent',
    before: (request) => {
      const { deps, invocation } = invocationScope(request.context);
      const log = invocationLog(deps.log, invocation);
      request.context.trigger = { event: parse(request.event, log) };
    },
  };
}
