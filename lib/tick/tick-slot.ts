/**
 * The arithmetic of the tick chain. Ticks are short invocations chained
 * through a FIFO queue whose delivery delay is one tick period: each tick
 * sends its successor. A message names its slot, a number that only grows
 * along a chain, and SQS FIFO drops a message whose deduplication id (the
 * slot) was sent in the last five minutes. So a duplicate delivery cannot fork
 * the chain for long: two chains that send in the same period pick the same
 * slot, and the second send is dropped, ending that chain.
 */

/** The slot of the period that contains `nowMs` (wall-clock epoch milliseconds). */
export function slotAt(nowMs: number, periodMs: number): number {
  return Math.floor(nowMs / periodMs);
}

/**
 * The slot of the message a tick sends on: the next period's, and always
 * past the tick's own slot, so a chain never repeats a slot (a repeat would
 * be dropped as a duplicate and end the chain) even when clocks disagree by
 * a few milliseconds across sandboxes.
 *
 * Two chains (a redelivered message, or a restart while a chain still ran)
 * both send in every period, since each waits at least one period between
 * sends; the first send of a period wins and the other chain ends there.
 */
export function successorSlot(current: number | undefined, nowMs: number, periodMs: number): number {
  const next = slotAt(nowMs, periodMs) + 1;
  return current === undefined ? next : Math.max(current + 1, next);
}

/**
 * Who sends a message: a tick its successor (`next`), or the keeper a new
 * chain (`restart`).
 */
export type TickSender = 'next' | 'restart';

/**
 * The SQS FIFO deduplication id of a slot's message. A restart has ids of its
 * own: a chain lost a moment ago may have sent the same slot, and its id,
 * still remembered, would drop the restart. Restarts of one slot (the
 * schedule's rare double invocation) are one; a restart that meets a live
 * chain merges with it from its successor on, which sends a plain slot.
 */
export function deduplicationId(slot: number, sender: TickSender = 'next'): string {
  return sender === 'next' ? `tick-${slot}` : `restart-${slot}`;
}

/**
 * The message group of a chain: FIFO delivers a group's messages one at a
 * time, so the ticks of one chain never overlap. A chain runs in the group
 * it was started in, since each tick sends its successor to its own
 * message's group.
 */
export const TICK_MESSAGE_GROUP = 'tick';

/**
 * The group of a chain the keeper starts while the queue still holds
 * messages that do not move (a head whose processing keeps failing, which
 * FIFO delivers again before anything behind it): a new group is not
 * blocked by it. Should the stuck chain move again, the two merge within a
 * period, as any two chains do, deduplication being queue-wide; only in
 * that period can a tick of each run at once.
 */
export function restartGroup(slot: number): string {
  return `restart-${slot}`;
}
