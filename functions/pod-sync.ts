import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { type Dependencies, loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { invocationOf } from '../lib/invocation.ts';
import { podSync, validPodSyncEvent } from '../lib/pod/pod-sync-entry.ts';
import { whenReleaseMayAct } from '../lib/release/gate.ts';

/**
 * Triggered by the pod event rule: reconciles the one pod key an event names.
 * A malformed event fails with InvalidEventError (to the dead-letter queue);
 * a pod that cannot be reconciled yet fails with PodSyncRetryError (retried).
 * `env` is read once, at the first invocation (cold start).
 */
export function createPodSyncHandler(env: Record<string, string | undefined> = process.env) {
  let deps: Dependencies | undefined;
  return middy(async (event: unknown, context: Context) => {
    deps ??= await loadDependencies(loadConfig(env), { functionName: context.functionName });
    // Validated before the release gate records anything: bad input writes nothing.
    const detail = validPodSyncEvent(deps.log.child({ requestId: context.awsRequestId }), event);
    return whenReleaseMayAct(deps, invocationOf(context, deps.clock), (d, i) => podSync(d, i, detail));
  });
}

export const handler = createPodSyncHandler();
