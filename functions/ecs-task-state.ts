import { loadDependencies } from '../lib/app/dependencies.ts';
import { ecsTaskState, validTaskStateEvent } from '../lib/app/ecs-task-state-entry.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';

/**
 * Triggered by the rule for our ECS cluster's "ECS Task State Change" events
 * on the account's default bus: applies one event to its pod and writes the
 * pod's status at once. A malformed event fails with an error naming each
 * bad field before anything is written. `env` is read once, at the first
 * invocation (cold start).
 */
export function createEcsTaskStateHandler(env: Record<string, string | undefined> = process.env) {
  return lambdaHandler(
    { env, dependencies: loadDependencies, event: (event, log) => validTaskStateEvent(log, event) },
    ecsTaskState,
  );
}

export const handler = createEcsTaskStateHandler();
