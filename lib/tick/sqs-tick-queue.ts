/**
 * The SQS adapter of the tick chain: the only module of the functions that
 * talks to SQS, through @aws-sdk/client-sqs configured by awsClientOptions
 * (lib/aws/client-options.ts: timeouts, the invocation's deadline,
 * retries, keep-alive). The client sends to the queue URL's own host
 * (`useQueueUrlAsEndpoint`, the SDK's default) and checks SendMessage's MD5
 * of the body; a mismatch is our typed InvalidChecksumError.
 */
import {
  GetQueueAttributesCommand,
  SendMessageCommand,
  SQSClient,
  type SQSClientConfig,
} from '@aws-sdk/client-sqs';
import { awsClientOptions } from '../aws/client-options.ts';
import { type Config, ConfigError } from '../config/config.ts';
import type { TickQueue } from './tick-queue.ts';
import { deduplicationId } from './tick-slot.ts';
import type { TickMessage } from './tick-trigger.ts';

/** The attributes whose sum is every message the queue holds. */
const DEPTH_ATTRIBUTES = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;

/** SendMessage's answer says SQS received another body than the one sent (the SDK's MD5 check). */
export class InvalidChecksumError extends Error {
  override readonly name = 'InvalidChecksumError';
}

export interface SqsTickQueueOptions {
  queueUrl: string;
  region: string;
  /** The SDK's default provider chain (the function role's, in Lambda) when omitted. */
  credentials?: SQSClientConfig['credentials'];
  /** One HTTP attempt, connection included. Default 5000. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries included. Default 3. */
  maxAttempts?: number;
}

/** The tick chain on a real SQS FIFO queue. */
export function createSqsTickQueue(options: SqsTickQueueOptions): TickQueue {
  const { queueUrl, region, credentials } = options;
  const client = new SQSClient({
    region,
    ...(credentials ? { credentials } : {}),
    ...awsClientOptions({
      ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
      ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    }),
  });
  return {
    async send({ slot, sender, group }, signal) {
      const body: TickMessage = { v: 1, slot };
      const command = new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(body),
        MessageGroupId: group,
        MessageDeduplicationId: deduplicationId(slot, sender),
      });
      try {
        await client.send(command, signal ? { abortSignal: signal } : {});
      } catch (err) {
        if (err instanceof Error && err.message === 'InvalidChecksumError') {
          throw new InvalidChecksumError(`SQS received a different body than tick ${slot} sent`, {
            cause: err,
          });
        }
        throw err;
      }
    },
    async isEmpty(signal) {
      const output = await client.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...DEPTH_ATTRIBUTES] }),
        signal ? { abortSignal: signal } : {},
      );
      const attributes = output.Attributes ?? {};
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
