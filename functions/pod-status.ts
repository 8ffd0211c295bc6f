import { loadDependencies } from '../lib/app/dependencies.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';
import { podStatus } from '../lib/pod/status/pod-status-entry.ts';

/**
 * Scheduled every minute: polls the provider every few seconds and writes
 * changed pod statuses, force-deletes pods whose grace period ended and
 * deletes dangling provider pods, until shortly before its deadline. `env` is
 * read once, at the first invocation (cold start).
 */
export function createPodStatusHandler(env: Record<string, string | undefined> = process.env) {
  return lambdaHandler(
    { env, dependencies: loadDependencies, event: parseScheduledEvent },
    (deps, invocation) => podStatus(deps, invocation),
  );
}

export const handler = createPodStatusHandler();
