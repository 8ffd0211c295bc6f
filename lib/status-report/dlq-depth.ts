/**
 * The SQS adapter of the status command: the only module that imports the
 * SQS SDK. Reads how many failed pod events wait in pod-sync's dead-letter
 * queue.
 */
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { awsClientOptions } from '../aws/client-options.ts';

/** Messages in a queue, as SQS approximates them. */
export interface QueueDepth {
  /** Waiting to be received. */
  visible: number;
  /** Received by someone and not yet deleted (e.g. a redrive in progress). */
  inFlight: number;
}

/** Reads the approximate depth of the queue at `url`. Throws what SQS throws (no access, no queue). */
export async function readQueueDepth(
  url: string,
  options: { region: string; signal?: AbortSignal },
): Promise<QueueDepth> {
  const client = new SQSClient({ region: options.region, ...awsClientOptions({ maxAttempts: 2 }) });
  try {
    const { Attributes: a = {} } = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
      options.signal ? { abortSignal: options.signal } : {},
    );
    return {
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  } finally {
    client.destroy();
  }
}
