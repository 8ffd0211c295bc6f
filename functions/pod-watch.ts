import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { type Dependencies, loadDependencies } from '../lib/app/dependencies.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { createEventBridgePublisher } from '../lib/events/eventbridge-publisher.ts';
import type { EventPublisher } from '../lib/events/publisher.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { invocationOf } from '../lib/invocation.ts';
import { podWatch } from '../lib/pod/pod-watch.ts';
import { whenReleaseMayAct } from '../lib/release/gate.ts';

/**
 * Scheduled every minute: lists and watches the virtual nodes' pods and
 * publishes one event per change to the pod event bus until shortly before
 * its deadline, overlapping with the next invocation as its hot standby.
 * `env` is read once, at the first invocation (cold start). Tests and
 * `npm start` inject a publisher onto the local bus.
 */
export function createPodWatchHandler(
  env: Record<string, string | undefined> = process.env,
  overrides: { publisher?: EventPublisher } = {},
) {
  let deps: Dependencies | undefined;
  let publisher: EventPublisher | undefined;
  return middy(async (event: unknown, context: Context) => {
    deps ??= await loadDependencies(loadConfig(env), { functionName: context.functionName });
    publisher ??=
      overrides.publisher ??
      createEventBridgePublisher({
        busName: deps.config.events.busName,
        region: deps.config.dynamodb.region,
        onPublished: (count) => deps?.metrics.eventsPublished(count),
      });
    parseScheduledEvent(event);
    const events = publisher;
    return whenReleaseMayAct(deps, invocationOf(context, deps.clock), (d, i) => podWatch(d, events, i));
  });
}

export const handler = createPodWatchHandler();
