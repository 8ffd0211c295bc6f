import { loadDependencies } from '../lib/app/dependencies.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';
import { podSync, validPodSyncEvent } from '../lib/pod/sync/pod-sync-entry.ts';

/**
 * Triggered by the pod event rule: reconciles the one pod key an event names.
 * A malformed event fails with InvalidEventError (to the dead-letter queue)
 * before anything is written; a pod that cannot be reconciled yet fails with
 * PodSyncRetryError (retried). `env` is read once, at the first invocation
 * (cold start).
 */
export function createPodSyncHandler(env: Record<string, string | undefined> = process.env) {
  return lambdaHandler(
    { env, dependencies: loadDependencies, event: (event, log) => validPodSyncEvent(log, event) },
    podSync,
  );
}

export const handler = createPodSyncHandler();
