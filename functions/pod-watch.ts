import { loadBaseDependencies } from '../lib/app/dependencies.ts';
import { podWatch } from '../lib/app/pod-watch.ts';
import { createEventBridgePublisher } from '../lib/events/eventbridge-publisher.ts';
import type { EventPublisher } from '../lib/events/publisher.ts';
import { parseScheduledEvent } from '../lib/events/scheduled-event.ts';
import { lambdaHandler } from '../lib/handler/lambda-handler.ts';

/**
 * Scheduled every minute: lists and watches the virtual nodes' pods and
 * publishes one event per change to the pod event bus until shortly before
 * its deadline, overlapping with the next invocation as its hot standby.
 * It never calls the provider, so it builds none (loadBaseDependencies):
 * its role holds no provider right, not even the Docker engine's TLS
 * secret (docs/security.md). `env` is read once, at the first invocation (cold start). Tests and
 * `npm start` inject a publisher onto the local bus; otherwise one
 * EventBridge publisher is built per cold start.
 */
export function createPodWatchHandler(
  env: Record<string, string | undefined> = process.env,
  overrides: { publisher?: EventPublisher } = {},
) {
  let publisher = overrides.publisher;
  return lambdaHandler(
    { env, dependencies: loadBaseDependencies, event: parseScheduledEvent },
    (deps, invocation) => {
      publisher ??= createEventBridgePublisher({
        busName: deps.config.events.busName,
        region: deps.config.dynamodb.region,
        onPublished: (count) => deps.metrics.eventsPublished(count),
      });
      return podWatch(deps, publisher, invocation);
    },
  );
}

export const handler = createPodWatchHandler();
