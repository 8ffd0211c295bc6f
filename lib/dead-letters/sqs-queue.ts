/**
 * The SQS adapter of pod-sync's dead-letter queue: the only module that
 * imports the SQS SDK. Used by the operator commands (`npm run redrive`,
 * `npm run status`), never by a function.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { awsClientOptions } from '../aws/client-options.ts';
import type { DeadLetterMessage, DeadLetterQueue, QueueDepth } from './queue.ts';

/** Long polling asks every SQS server, so an empty answer means the queue had nothing visible. */
const WAIT_SECONDS = 2;

export class SqsDeadLetterQueue implements DeadLetterQueue {
  constructor(
    readonly url: string,
    private readonly client: SQSClient,
  ) {}

  /** A queue on a client of its own (awsClientOptions: timeouts, retries). */
  static create(url: string, options: { region: string }): SqsDeadLetterQueue {
    return new SqsDeadLetterQueue(url, new SQSClient({ region: options.region, ...awsClientOptions() }));
  }

  async receive(
    max: number,
    visibilityTimeoutSeconds: number,
    signal?: AbortSignal,
  ): Promise<DeadLetterMessage[]> {
    const out = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.url,
        MaxNumberOfMessages: Math.max(1, Math.min(10, max)),
        VisibilityTimeout: visibilityTimeoutSeconds,
        WaitTimeSeconds: WAIT_SECONDS,
        MessageSystemAttributeNames: ['SentTimestamp'],
      }),
      signal ? { abortSignal: signal } : {},
    );
    const messages: DeadLetterMessage[] = [];
    for (const m of out.Messages ?? []) {
      if (!m.MessageId || !m.ReceiptHandle || m.Body === undefined) continue;
      const sent = Number(m.Attributes?.SentTimestamp);
      messages.push({
        id: m.MessageId,
        receiptHandle: m.ReceiptHandle,
        body: m.Body,
        ...(Number.isFinite(sent) ? { sentAt: sent } : {}),
      });
    }
    return messages;
  }

  async delete(messages: readonly DeadLetterMessage[], signal?: AbortSignal): Promise<string[]> {
    if (messages.length === 0) return [];
    const out = await this.client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: this.url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.receiptHandle })),
      }),
      signal ? { abortSignal: signal } : {},
    );
    return (out.Failed ?? []).flatMap((f) => {
      const handle = messages[Number(f.Id)]?.receiptHandle;
      return handle ? [handle] : [];
    });
  }

  /** How many messages wait and are in flight. Throws what SQS throws (no access, no queue). */
  async depth(signal?: AbortSignal): Promise<QueueDepth> {
    const { Attributes: a = {} } = await this.client.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
      signal ? { abortSignal: signal } : {},
    );
    return {
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }

  destroy(): void {
    this.client.destroy();
  }
}

/** The queue's name: the last segment of its URL (https://sqs.<region>.amazonaws.com/<account>/<name>). */
export function queueNameOf(url: string): string {
  return new URL(url).pathname.split('/').filter(Boolean).at(-1) ?? url;
}
