import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { type Dependencies, loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { invocationOf } from '../lib/invocation.ts';
import { podStatus } from '../lib/pod/pod-status-entry.ts';
import { whenReleaseMayAct } from '../lib/release/gate.ts';

/**
 * Scheduled every minute: polls the provider every few seconds and writes
 * changed pod statuses, force-deletes pods whose grace period ended and
 * deletes dangling provider pods, until shortly before its deadline. `env` is
 * read once, at the first invocation (cold start).
 */
export function createPodStatusHandler(env: Record<string, string | undefined> = process.env) {
  let deps: Dependencies | undefined;
  return middy(async (event: unknown, context: Context) => {
    deps ??= await loadDependencies(loadConfig(env), { functionName: context.functionName });
    parseScheduledEvent(event);
    return whenReleaseMayAct(deps, invocationOf(context, deps.clock), podStatus);
  });
}

export const handler = createPodStatusHandler();
