/**
 * The SQS adapter of the tick chain: the only module of the functions that
 * imports the SQS SDK.
 */
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type Config, ConfigError } from '../config/config.ts';
import type { TickQueue } from './tick-queue.ts';
import { deduplicationId, TICK_MESSAGE_GROUP } from './tick-slot.ts';
import type { TickMessage } from './tick-trigger.ts';

/** The attributes whose sum is every message the queue holds. */
const DEPTH_ATTRIBUTES = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;

export interface SqsTickQueueOptions {
  queueUrl: string;
  region: string;
  /** The SQS client; one is built from `region` when not given (tests pass one with its transport replaced). */
  client?: SQSClient;
}

/** The tick chain on a real SQS FIFO queue. */
export function createSqsTickQueue(options: SqsTickQueueOptions): TickQueue {
  const client = options.client ?? new SQSClient({ region: options.region, maxAttempts: 3 });
  const { queueUrl } = options;
  return {
    async send(slot, sender, signal) {
      const body: TickMessage = { v: 1, slot };
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(body),
          MessageGroupId: TICK_MESSAGE_GROUP,
          MessageDeduplicationId: deduplicationId(slot, sender),
        }),
        signal ? { abortSignal: signal } : {},
      );
    },
    async isEmpty(signal) {
      const { Attributes: attributes = {} } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...DEPTH_ATTRIBUTES] }),
        signal ? { abortSignal: signal } : {},
      );
      return DEPTH_ATTRIBUTES.every((name) => Number(attributes[name] ?? '0') === 0);
    },
  };
}

/**
 * The tick queue the configuration names (SVK_TICK_QUEUE_URL).
 * @throws ConfigError when it names none: the tick function cannot chain without it.
 */
export function sqsTickQueueOf(config: Config): TickQueue {
  const { queueUrl } = config.tick;
  if (!queueUrl) {
    throw new ConfigError([
      {
        variable: 'SVK_TICK_QUEUE_URL',
        message: "must be set for the tick function (the chain's FIFO queue)",
      },
    ]);
  }
  return createSqsTickQueue({ queueUrl, region: config.dynamodb.region });
}
