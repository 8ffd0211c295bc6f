import { loadDependencies } from '../lib/app/dependencies.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';
import { heartbeat } from '../lib/node/heartbeat-entry.ts';

/**
 * Scheduled every minute: renews the virtual nodes' leases and status until
 * shortly before its deadline, overlapping with the next invocation as its
 * hot standby. `env` is read once, at the first invocation (cold start).
 */
export function createHeartbeatHandler(env: Record<string, string | undefined> = process.env) {
  return lambdaHandler(
    { env, dependencies: loadDependencies, event: parseScheduledEvent },
    (deps, invocation) => heartbeat(deps, invocation),
  );
}

export const handler = createHeartbeatHandler();
