import type { TickSender } from './tick-slot.ts';

/**
 * The queue that chains ticks: an SQS FIFO queue with a delivery delay of
 * one tick period (queue-level: FIFO queues take no per-message delay), one
 * message group, and a visibility timeout just above the tick function's
 * timeout, so that a tick that crashes or times out is delivered again: the
 * chain's standby. Implemented by the SQS adapter (sqs-tick-queue.ts) and, in
 * local runs, by the in-process queue (lib/local/local-sqs-queue.ts).
 */
export interface TickQueue {
  /**
   * Sends the message of `slot`, deduplicated by slot and sender: a second
   * send of the same within five minutes is accepted and dropped, which is
   * what ends a second chain (tick-slot.ts). Throws when the queue cannot be
   * reached; the tick then fails after its work, and its own message is
   * delivered again after the visibility timeout.
   */
  send(slot: number, sender: TickSender, signal?: AbortSignal): Promise<void>;
  /**
   * Whether the queue holds no message at all (waiting, delayed or being
   * processed), as SQS approximates it: a healthy chain always holds one,
   * because a tick sends its successor before its own message is deleted.
   */
  isEmpty(signal?: AbortSignal): Promise<boolean>;
}
