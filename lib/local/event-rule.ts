import type { BusEvent } from './put-events-entry.ts';

/** The subset of EventBridge event patterns the project's rules use: exact values of top-level fields. */
export interface EventPattern {
  source?: string[];
  'detail-type'?: string[];
}

export function matches(pattern: EventPattern, event: BusEvent): boolean {
  if (pattern.source && !pattern.source.includes(event.source)) return false;
  if (pattern['detail-type'] && !pattern['detail-type'].includes(event['detail-type'])) return false;
  return true;
}

/**
 * A rule with one target, e.g. `runtime.asTarget('pod-sync')`. A rejection
 * counts as a failed delivery; one with an error whose `retryable` is false
 * is dead-lettered at once, without retries.
 */
export interface Rule {
  name: string;
  pattern: EventPattern;
  target: (event: BusEvent) => Promise<unknown>;
}

export type Reorder = 'none' | 'reverse' | 'shuffle';

/** One attempt to hand an event to a rule's target, logged when it ends. */
export interface DeliveryRecord {
  rule: string;
  eventId: string;
  /** 1 for the first attempt, 2 for the first retry, ... */
  attempt: number;
  status: 'delivered' | 'failed' | 'dropped';
  event: BusEvent;
  error?: unknown;
}

/** An event whose target still failed after every retry: what would land in the target's DLQ. */
export interface DeadLetter {
  rule: string;
  event: BusEvent;
  error: unknown;
  attempts: number;
}

/** `items` in the given order: as they are, reversed, or shuffled with `random`. */
export function reorder<T>(items: readonly T[], order: Reorder, random: () => number): T[] {
  const copy = [...items];
  if (order === 'reverse') copy.reverse();
  if (order === 'shuffle') {
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
    }
  }
  return copy;
}
