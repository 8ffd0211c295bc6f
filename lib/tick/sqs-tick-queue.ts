/**
 * The SQS adapter of the tick chain: the only module of the functions that
 * talks to SQS. It speaks SQS's JSON protocol (AWS JSON 1.0, `AmazonSQS.*`
 * targets, as @aws-sdk/client-sqs does) on our own wire
 * (lib/aws/aws-json-wire.ts), so that the tick never loads the SQS SDK.
 */
import { createHash } from 'node:crypto';
import { type AwsJsonService, AwsJsonWire } from '../aws/aws-json-wire.ts';
import { type AwsCredentials, type CredentialProvider, credentialProvider } from '../aws/credentials.ts';
import { type Config, ConfigError } from '../config/config.ts';
import type { TickQueue } from './tick-queue.ts';
import { deduplicationId } from './tick-slot.ts';
import type { TickMessage } from './tick-trigger.ts';

export const SQS: AwsJsonService = {
  name: 'SQS',
  signingName: 'sqs',
  targetPrefix: 'AmazonSQS',
  // SQS answers in JSON with its older query protocol's error codes beside (x-amzn-query-error).
  queryCompatible: true,
};

/** The attributes whose sum is every message the queue holds. */
const DEPTH_ATTRIBUTES = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;

/** What SendMessage's answer says of the body SQS received did not match it (the SDK's check, too). */
export class InvalidChecksumError extends Error {
  override readonly name = 'InvalidChecksumError';
}

export interface SqsTickQueueOptions {
  queueUrl: string;
  region: string;
  /** The environment's credentials; the SDK's provider chain, loaded when first needed, without them. */
  credentials?: AwsCredentials | CredentialProvider;
  /** One HTTP attempt, connection included. Default 5000. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries included. Default 3. */
  maxAttempts?: number;
}

/**
 * The tick chain on a real SQS FIFO queue. Calls go to the queue URL's own
 * host, as the SDK sends them by default (`useQueueUrlAsEndpoint`).
 */
export function createSqsTickQueue(options: SqsTickQueueOptions): TickQueue {
  const { queueUrl, region } = options;
  const url = new URL('/', new URL(queueUrl).origin);
  const given = options.credentials;
  const credentials = typeof given === 'function' ? given : credentialProvider(given);
  const wire = new AwsJsonWire(SQS, async () => ({ url, region, credentials }), {
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    maxAttempts: options.maxAttempts ?? 3,
  });
  return {
    async send({ slot, sender, group }, signal) {
      const body: TickMessage = { v: 1, slot };
      const messageBody = JSON.stringify(body);
      const output = await wire.send(
        'SendMessage',
        {
          QueueUrl: queueUrl,
          MessageBody: messageBody,
          MessageGroupId: group,
          MessageDeduplicationId: deduplicationId(slot, sender),
        },
        signal,
      );
      if (output.MD5OfMessageBody !== createHash('md5').update(messageBody).digest('hex'))
        throw new InvalidChecksumError(`SQS received a different body than tick ${slot} sent`);
    },
    async isEmpty(signal) {
      const output = await wire.send(
        'GetQueueAttributes',
        { QueueUrl: queueUrl, AttributeNames: [...DEPTH_ATTRIBUTES] },
        signal,
      );
      const attributes = isRecord(output.Attributes) ? output.Attributes : {};
      return DEPTH_ATTRIBUTES.every((name) => Number(attributes[name] ?? '0') === 0);
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
  return createSqsTickQueue({
    queueUrl,
    region: config.dynamodb.region,
    ...(config.aws.credentials ? { credentials: config.aws.credentials } : {}),
  });
}
