import type { TickSender } from './tick-slot.ts';

/** A message of the chain: its slot, who sends it, and the message group it goes to. */
export interface TickSend {
  slot: number;
  sender: TickSender;
  /**
   * The chain's message group: a tick sends its successor to its own
   * message's group; the keeper starts a chain in TICK_MESSAGE_GROUP, or in a
   * group of its own when the queue's group is stuck (tick-slot.ts).
   */
  group: string;
}

/**
 * The queue that chains ticks: an SQS FIFO queue with a delivery delay of
 * one tick period (queue-level: FIFO queues take no per-message delay), one
 * live message group at a time, deduplication across the queue, and a
 * visibility timeout just above the tick function's
 * timeout, so that a tick that crashes or times out is delivered again: the
 * chain's standby. Implemented by the SQS adapter (sqs-tick-queue.ts) and, in
 * local runs, by the in-process queue (lib/local/local-sqs-queue.ts).
 */
export interface TickQueue {
  /**
   * Sends the message of a slot, deduplicated by slot and sender across the
   * whole queue (every message group): a second send of the same within five
   * minutes is accepted and dropped, which is what ends a second chain
   * (tick-slot.ts). Throws when the queue cannot be reached; the tick then
   * fails after its work, and its own message is delivered again after the
   * visibility timeout.
   */
  send(message: TickSend, signal?: AbortSignal): Promise<void>;
  /**
   * Whether the queue holds no message at all (waiting, delayed or being
   * processed), as SQS approximates it: a healthy chain always holds one,
   * because a tick sends its successor before its own message is deleted.
   */
  isEmpty(signal?: AbortSignal): Promise<boolean>;
}
