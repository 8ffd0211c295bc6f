/**
 * What redriving needs from a queue; the SQS adapter (sqs-queue.ts)
 * implements it. Messages are received under a visibility timeout: one that
 * is not deleted comes back after it, so a crash never loses a message.
 */
export interface DeadLetterMessage {
  id: string;
  receiptHandle: string;
  body: string;
  /** When the message entered the queue (epoch ms), when known. */
  sentAt?: number;
}

export interface DeadLetterQueue {
  /** Up to `max` (≤ 10) messages, hidden from other receivers for `visibilityTimeoutSeconds`. */
  receive(max: number, visibilityTimeoutSeconds: number, signal?: AbortSignal): Promise<DeadLetterMessage[]>;
  /** Deletes the messages; resolves with the receipt handles that could not be deleted. */
  delete(messages: readonly DeadLetterMessage[], signal?: AbortSignal): Promise<string[]>;
}

/** Messages in a queue, as SQS approximates them. */
export interface QueueDepth {
  /** Waiting to be received. */
  visible: number;
  /** Received by someone and not yet deleted (e.g. a redrive in progress). */
  inFlight: number;
  /** Age of the oldest message in seconds (CloudWatch's ApproximateAgeOfOldestMessage), when known. */
  oldestAgeSeconds?: number;
}
