import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../clock.ts';

/** SQS FIFO's deduplication interval. */
export const DEDUPLICATION_INTERVAL_MS = 5 * 60_000;
/** SQS's longest long poll. */
export const MAX_WAIT_MS = 20_000;

export interface LocalSqsQueueOptions {
  clock?: Clock;
  /** The queue-level delivery delay (`DelaySeconds`, in ms): every message is hidden this long after it is sent. */
  delayMs?: number;
  /** `VisibilityTimeout` in ms: how long a received message stays hidden before it is delivered again. */
  visibilityTimeoutMs: number;
  /** Default {@link DEDUPLICATION_INTERVAL_MS}. */
  deduplicationMs?: number;
}

export interface SendMessageInput {
  body: string;
  groupId: string;
  deduplicationId: string;
}

export interface ReceivedMessage {
  messageId: string;
  receiptHandle: string;
  body: string;
  groupId: string;
  deduplicationId: string;
  /** How often this message has been received, this time included. */
  receiveCount: number;
  /** Epoch ms of the send, and of the first receive. */
  sentAt: number;
  firstReceivedAt: number;
}

/** The counts GetQueueAttributes approximates. */
export interface QueueCounts {
  /** ApproximateNumberOfMessages: receivable now. */
  visible: number;
  /** ApproximateNumberOfMessagesNotVisible: received and not deleted, visibility timeout running. */
  inFlight: number;
  /** ApproximateNumberOfMessagesDelayed: still within the delivery delay. */
  delayed: number;
}

/** The receipt handle is unknown, not the message's latest, or its visibility timeout has run out. */
export class ReceiptHandleInvalidError extends Error {
  override readonly name = 'ReceiptHandleInvalidError';
}

/** Requests made, by SQS action: what SQS bills. */
export type QueueRequestCounts = Record<
  'SendMessage' | 'ReceiveMessage' | 'DeleteMessage' | 'GetQueueAttributes',
  number
>;

interface Stored {
  messageId: string;
  body: string;
  groupId: string;
  deduplicationId: string;
  sequence: number;
  sentAt: number;
  /** Wall ms from which it can be received: the end of its delay, or of its visibility timeout. */
  visibleAt: number;
  receiveCount: number;
  firstReceivedAt: number;
  receiptHandle?: string;
}

/**
 * An in-process SQS FIFO queue with the semantics the tick chain relies on,
 * as the SQS developer guide states them: a queue-level delivery delay; a
 * deduplication id sent again within five minutes is accepted and dropped
 * (also after the first was deleted); within a message group, messages are
 * received in order and one at a time: none while an earlier one is in
 * flight; a received message is hidden for the visibility timeout and then
 * received again with a new receipt handle and a higher receive count; and
 * a receipt handle works only until its visibility timeout runs out (FIFO
 * rejects an expired one). Long polling waits up to 20 s for a message.
 *
 * Not modelled: retention, batch actions, ChangeMessageVisibility, receive
 * request attempt ids, dead-letter redrive.
 */
export class LocalSqsQueue {
  readonly requests: QueueRequestCounts = {
    SendMessage: 0,
    ReceiveMessage: 0,
    DeleteMessage: 0,
    GetQueueAttributes: 0,
  };
  readonly #clock: Clock;
  readonly #delayMs: number;
  readonly #visibilityMs: number;
  readonly #deduplicationMs: number;
  /** Every message not deleted, in send order. */
  #messages: Stored[] = [];
  /** Deduplication ids and when they were first sent. */
  readonly #sentIds = new Map<string, { at: number; messageId: string }>();
  #sequence = 0;
  #wakers: Array<() => void> = [];

  constructor(options: LocalSqsQueueOptions) {
    this.#clock = options.clock ?? systemClock;
    this.#delayMs = options.delayMs ?? 0;
    this.#visibilityMs = options.visibilityTimeoutMs;
    this.#deduplicationMs = options.deduplicationMs ?? DEDUPLICATION_INTERVAL_MS;
    if (!(this.#visibilityMs > 0)) throw new RangeError('visibilityTimeoutMs must be positive');
  }

  /** SendMessage. Returns the message id, and whether the send was dropped as a duplicate. */
  sendMessage(input: SendMessageInput): { messageId: string; duplicate: boolean } {
    this.requests.SendMessage++;
    const now = this.#clock.now();
    this.#forgetOldIds(now);
    const seen = this.#sentIds.get(input.deduplicationId);
    if (seen) return { messageId: seen.messageId, duplicate: true };
    const messageId = randomUUID();
    this.#sentIds.set(input.deduplicationId, { at: now, messageId });
    this.#messages.push({
      ...input,
      messageId,
      sequence: this.#sequence++,
      sentAt: now,
      visibleAt: now + this.#delayMs,
      receiveCount: 0,
      firstReceivedAt: 0,
    });
    this.#wake();
    return { messageId, duplicate: false };
  }

  /**
   * ReceiveMessage: up to `maxMessages` receivable messages, each group's in
   * order from its head; with `waitMs` (long polling, at most 20 s) waits
   * until one is receivable. An aborted wait returns nothing.
   */
  async receiveMessage(
    options: { maxMessages?: number; waitMs?: number; signal?: AbortSignal } = {},
  ): Promise<ReceivedMessage[]> {
    this.requests.ReceiveMessage++;
    const until = this.#clock.now() + Math.min(options.waitMs ?? 0, MAX_WAIT_MS);
    for (;;) {
      const received = this.#take(options.maxMessages ?? 1);
      if (received.length > 0 || options.signal?.aborted) return received;
      const now = this.#clock.now();
      if (now >= until) return [];
      await this.#waitForChange(Math.min(until, this.#nextVisibleAt()) - now, options.signal);
    }
  }

  /** DeleteMessage. @throws ReceiptHandleInvalidError for an unknown, superseded or expired handle. */
  deleteMessage(receiptHandle: string): void {
    this.requests.DeleteMessage++;
    const index = this.#messages.findIndex((m) => m.receiptHandle === receiptHandle);
    const message = this.#messages[index];
    if (!message) throw new ReceiptHandleInvalidError('the receipt handle is not a valid receipt handle');
    if (message.visibleAt <= this.#clock.now()) {
      throw new ReceiptHandleInvalidError('the receipt handle has expired');
    }
    this.#messages.splice(index, 1);
    this.#wake();
  }

  /** GetQueueAttributes' approximate counts (exact here). */
  counts(): QueueCounts {
    this.requests.GetQueueAttributes++;
    const now = this.#clock.now();
    const counts: QueueCounts = { visible: 0, inFlight: 0, delayed: 0 };
    for (const m of this.#messages) {
      if (m.visibleAt <= now) counts.visible++;
      else if (m.receiveCount > 0) counts.inFlight++;
      else counts.delayed++;
    }
    return counts;
  }

  /** Every message not deleted, oldest first (for tests and reports; not an SQS request). */
  peek(): Array<
    Pick<ReceivedMessage, 'messageId' | 'body' | 'groupId' | 'deduplicationId' | 'receiveCount'>
  > {
    return this.#messages.map(({ messageId, body, groupId, deduplicationId, receiveCount }) => ({
      messageId,
      body,
      groupId,
      deduplicationId,
      receiveCount,
    }));
  }

  /** Drops every message (PurgeQueue); deduplication ids are kept, as SQS keeps them. */
  purge(): void {
    this.#messages = [];
    this.#wake();
  }

  #take(max: number): ReceivedMessage[] {
    const now = this.#clock.now();
    const blocked = new Set<string>();
    const received: ReceivedMessage[] = [];
    for (const m of this.#messages) {
      if (received.length >= max) break;
      if (blocked.has(m.groupId)) continue;
      // The head of its group: hidden (delayed or in flight) blocks the whole group.
      if (m.visibleAt > now) {
        blocked.add(m.groupId);
        continue;
      }
      m.receiveCount++;
      if (m.receiveCount === 1) m.firstReceivedAt = now;
      m.visibleAt = now + this.#visibilityMs;
      m.receiptHandle = randomUUID();
      received.push({
        messageId: m.messageId,
        receiptHandle: m.receiptHandle,
        body: m.body,
        groupId: m.groupId,
        deduplicationId: m.deduplicationId,
        receiveCount: m.receiveCount,
        sentAt: m.sentAt,
        firstReceivedAt: m.firstReceivedAt,
      });
      // The next message of a group waits until this one is deleted.
      blocked.add(m.groupId);
    }
    return received;
  }

  #nextVisibleAt(): number {
    let next = Number.POSITIVE_INFINITY;
    for (const m of this.#messages) next = Math.min(next, m.visibleAt);
    return next;
  }

  #forgetOldIds(now: number): void {
    for (const [id, sent] of this.#sentIds) {
      if (now - sent.at < this.#deduplicationMs) break;
      this.#sentIds.delete(id);
    }
  }

  /** Resolves after `ms`, on a send or delete, or when `signal` aborts. */
  async #waitForChange(ms: number, signal?: AbortSignal): Promise<void> {
    const stop = new AbortController();
    let waker: (() => void) | undefined;
    const changed = new Promise<void>((resolve) => {
      waker = resolve;
      this.#wakers.push(resolve);
    });
    try {
      await Promise.race([
        this.#clock.sleep(Math.max(0, ms), signal ? AbortSignal.any([signal, stop.signal]) : stop.signal),
        changed,
      ]);
    } catch {
      // Aborted: the caller looks at the signal.
    } finally {
      stop.abort();
      this.#wakers = this.#wakers.filter((w) => w !== waker);
    }
  }

  #wake(): void {
    for (const wake of this.#wakers.splice(0)) wake();
  }
}
