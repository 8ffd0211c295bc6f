import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { type Dependencies, loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { invocationOf } from '../lib/invocation.ts';
import { heartbeat } from '../lib/node/heartbeat-entry.ts';
import { whenReleaseMayAct } from '../lib/release/gate.ts';

/**
 * Scheduled every minute: renews the virtual nodes' leases and status until
 * shortly before its deadline, overlapping with the next invocation as its
 * hot standby. `env` is read once, at the first invocation (cold start).
 */
export function createHeartbeatHandler(env: Record<string, string | undefined> = process.env) {
  let deps: Dependencies | undefined;
  return middy(async (event: unknown, context: Context) => {
    deps ??= await loadDependencies(loadConfig(env), { functionName: context.functionName });
    parseScheduledEvent(event);
    return whenReleaseMayAct(deps, invocationOf(context, deps.clock), heartbeat);
  });
}

export const handler = createHeartbeatHandler();
