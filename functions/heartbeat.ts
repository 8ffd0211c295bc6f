import { loadDependencies } from '../lib/app/dependencies.ts';
import { heartbeat } from '../lib/app/heartbeat.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';

/**
 * Scheduled every minute: renews the virtual nodes' leases and status until
 * shortly before its deadline, overlapping with the next invocation as its
 * hot standby. `env` is read once, at the first invocation (cold start).
 */
export function createHeartbeatHandler(env: Record<string, string | undefined> = process.env) {
  return lambdaHandler(
    // The heartbeat reads the release gate itself, after its leases are safe (lib/app/heartbeat.ts).
    { env, dependencies: loadDependencies, event: parseScheduledEvent, gate: false },
    (deps, invocation) => heartbeat(deps, invocation),
  );
}

export const handler = createHeartbeatHandler();
