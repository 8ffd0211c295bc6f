import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { PodEventPublisher, type PodEventPublisherOptions } from './publisher.ts';

/**
 * The EventBridge adapter: the only module that imports the EventBridge SDK,
 * at the first PutEvents (a dynamic import), so that a cold start that
 * publishes nothing does not load it before its first request. It supplies
 * the PutEvents call; batching, validation and resending the failed entries
 * are the publisher's (publisher.ts).
 */

export interface EventBridgePublisherOptions extends Omit<PodEventPublisherOptions, 'send' | 'busName'> {
  /** Name or ARN of the bus the pod-sync rule listens on (SVK_EVENT_BUS_NAME). */
  busName: string;
  /** Defaults to the SDK's own resolution (AWS_REGION in Lambda). */
  region?: string;
  /** An endpoint URL other than AWS's, e.g. a VPC endpoint. */
  endpoint?: string;
  /** Per HTTP request, so a stuck call cannot eat the watcher's time. Default 5 s. */
  requestTimeoutMs?: number;
  /** A client built elsewhere; the options above are then ignored. */
  client?: EventBridgeClient;
}

/**
 * Builds the client once per cold start, at the first PutEvents. The SDK
 * retries a throttled or failed request (awsClientOptions); the publisher
 * then resends the entries that still failed, with its own jittered backoff.
 */
export function createEventBridgePublisher(options: EventBridgePublisherOptions): PodEventPublisher {
  const { busName, region, endpoint, requestTimeoutMs, client: given, ...rest } = options;
  let sdk:
    | Promise<[typeof import('@aws-sdk/client-eventbridge'), typeof import('../aws/client-options.ts')]>
    | undefined;
  let client = given;
  return new PodEventPublisher({
    ...rest,
    busName,
    send: async (entries) => {
      sdk ??= Promise.all([import('@aws-sdk/client-eventbridge'), import('../aws/client-options.ts')]);
      const [{ EventBridgeClient, PutEventsCommand }, { awsClientOptions }] = await sdk;
      client ??= new EventBridgeClient({
        ...(region !== undefined ? { region } : {}),
        ...(endpoint !== undefined ? { endpoint } : {}),
        ...awsClientOptions(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
      });
      return client.send(new PutEventsCommand({ Entries: entries }));
    },
  });
}
