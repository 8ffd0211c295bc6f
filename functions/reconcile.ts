import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { type Dependencies, loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { invocationOf } from '../lib/invocation.ts';
import { reconcile } from '../lib/reconcile/reconcile-entry.ts';
import { whenReleaseMayAct } from '../lib/release/gate.ts';

/**
 * Scheduled every minute: campaigns for the reconcile lock (newest release
 * only), keeps the reconciler status and repairs drift between the
 * configuration, the API server and the provider until shortly before its
 * deadline. `env` is read once, at the first invocation (cold start).
 */
export function createReconcileHandler(env: Record<string, string | undefined> = process.env) {
  let deps: Dependencies | undefined;
  return middy(async (event: unknown, context: Context) => {
    deps ??= await loadDependencies(loadConfig(env), { functionName: context.functionName });
    parseScheduledEvent(event);
    return whenReleaseMayAct(deps, invocationOf(context, deps.clock), reconcile, { reconciler: true });
  });
}

export const handler = createReconcileHandler();
