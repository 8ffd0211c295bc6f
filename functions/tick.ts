import { loadDependencies } from '../lib/app/dependencies.ts';
import { createEventBridgePublisher } from '../lib/events/eventbridge-publisher.ts';
import type { EventPublisher } from '../lib/events/publisher.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';
import { sqsTickQueueOf } from '../lib/tick/sqs-tick-queue.ts';
import { type TickOptions, tick } from '../lib/tick/tick-entry.ts';
import type { TickQueue } from '../lib/tick/tick-queue.ts';
import { parseTickTrigger } from '../lib/tick/tick-trigger.ts';

/**
 * Triggered by the tick queue (one message at a time, every lease renew
 * interval) and by a once-a-minute schedule that restarts a lost chain:
 * renews the nodes' leases and status, drains the pod watches, polls pod
 * status and reconciles, then returns within seconds. The release gate is
 * checked inside, after the next tick is queued and bounded in time, so
 * that a slow state table never holds up the leases. `env` is read once, at
 * the first invocation (cold start). Tests and `npm start` inject the
 * in-process queue and bus; otherwise the SQS queue of SVK_TICK_QUEUE_URL
 * and one EventBridge publisher are built per cold start.
 */
export function createTickHandler(
  env: Record<string, string | undefined> = process.env,
  overrides: { queue?: TickQueue; publisher?: EventPublisher } & Pick<TickOptions, 'parts'> = {},
) {
  let { queue, publisher } = overrides;
  const { parts } = overrides;
  return lambdaHandler(
    { env, dependencies: loadDependencies, event: parseTickTrigger, gate: false },
    (deps, invocation, trigger) => {
      queue ??= sqsTickQueueOf(deps.config);
      publisher ??= createEventBridgePublisher({
        busName: deps.config.events.busName,
        region: deps.config.dynamodb.region,
        onPublished: (count) => deps.metrics.eventsPublished(count),
      });
      return tick(deps, invocation, trigger, { queue, publisher, ...(parts ? { parts } : {}) });
    },
  );
}

export const handler = createTickHandler();
