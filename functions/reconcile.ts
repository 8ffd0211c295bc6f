import { loadDependencies } from '../lib/app/dependencies.ts';
import { reconcile } from '../lib/app/reconcile.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';

/**
 * Scheduled every minute: campaigns for the reconcile lock (newest release
 * only), keeps the reconciler status and repairs drift between the
 * configuration, the API server and the provider until shortly before its
 * deadline. `env` is read once, at the first invocation (cold start).
 */
export function createReconcileHandler(env: Record<string, string | undefined> = process.env) {
  return lambdaHandler(
    { env, dependencies: loadDependencies, event: parseScheduledEvent, gate: { reconciler: true } },
    (deps, invocation) => reconcile(deps, invocation),
  );
}

export const handler = createReconcileHandler();
