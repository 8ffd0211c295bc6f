import type { SQSEvent } from 'aws-lambda';
import type { TickQueue } from '../tick/tick-queue.ts';
import { deduplicationId } from '../tick/tick-slot.ts';
import type { TickMessage } from '../tick/tick-trigger.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './lambda-context.ts';
import type { InvocationResult } from './lambda-function.ts';
import type { LocalLambdaRuntime } from './lambda-runtime.ts';
import {
  type LocalSqsQueue,
  MAX_WAIT_MS,
  ReceiptHandleInvalidError,
  type ReceivedMessage,
} from './local-sqs-queue.ts';

export interface QueueEventSourceOptions {
  queue: LocalSqsQueue;
  /** Used in the records' `eventSourceARN`. */
  queueName: string;
  runtime: LocalLambdaRuntime;
  functionName: string;
  /** Messages per invocation (BatchSize); 1 as deployed. */
  batchSize?: number;
  /** After each invocation, with its messages and outcome (for logs, tests and benchmarks). */
  onDelivery?: (delivery: {
    messages: ReceivedMessage[];
    result: InvocationResult;
    deleted: boolean;
  }) => void;
}

/** The Lambda event Lambda's SQS event source mapping builds from received messages. */
export function sqsEvent(messages: readonly ReceivedMessage[], queueName: string): SQSEvent {
  return {
    Records: messages.map((m) => ({
      messageId: m.messageId,
      receiptHandle: m.receiptHandle,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: LOCAL_ACCOUNT_ID,
        ApproximateFirstReceiveTimestamp: String(m.firstReceivedAt),
        MessageGroupId: m.groupId,
        MessageDeduplicationId: m.deduplicationId,
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${queueName}`,
      awsRegion: LOCAL_REGION,
    })),
  };
}

/**
 * Lambda's SQS event source mapping for a FIFO queue, in process: one poller
 * long-polls the queue, invokes the function synchronously with each batch,
 * and deletes the batch when the invocation succeeded. A failed, timed-out or
 * crashed invocation leaves its messages in flight: the queue delivers them
 * again once their visibility timeout runs out, and (FIFO) nothing behind
 * them in their group before that. Batching windows do not apply (FIFO).
 */
export class QueueEventSource {
  readonly #o: QueueEventSourceOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(options: QueueEventSourceOptions) {
    this.#o = options;
  }

  /** Starts polling; idempotent. */
  start(): void {
    this.#loop ??= this.#poll();
  }

  /** Stops polling and waits for the invocation in progress (the runtime decides whether it is crashed). */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  async #poll(): Promise<void> {
    const { queue, runtime, functionName, queueName } = this.#o;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const messages = await queue.receiveMessage({
        maxMessages: this.#o.batchSize ?? 1,
        waitMs: MAX_WAIT_MS,
        signal,
      });
      if (messages.length === 0) continue;
      const result = await runtime.invoke(functionName, sqsEvent(messages, queueName)).done;
      let deleted = false;
      if (result.status === 'ok') {
        deleted = true;
        for (const m of messages) {
          try {
            queue.deleteMessage(m.receiptHandle);
          } catch (err) {
            // The invocation outlived the visibility timeout: the message is delivered again.
            if (!(err instanceof ReceiptHandleInvalidError)) throw err;
            deleted = false;
          }
        }
      }
      this.#o.onDelivery?.({ messages, result, deleted });
    }
  }
}

/** The tick chain on the in-process queue: what the SQS adapter does against SQS. */
export function createLocalTickQueue(queue: LocalSqsQueue): TickQueue {
  return {
    send: async ({ slot, sender, group }) => {
      const body: TickMessage = { v: 1, slot };
      queue.sendMessage({
        body: JSON.stringify(body),
        groupId: group,
        deduplicationId: deduplicationId(slot, sender),
      });
    },
    isEmpty: async () => {
      const { visible, inFlight, delayed } = queue.counts();
      return visible + inFlight + delayed === 0;
    },
  };
}
