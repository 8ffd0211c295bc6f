import { type PodEventDetail, parsePodEvent } from '../events/pod-event.ts';

/**
 * The two shapes a message of pod-sync's dead-letter queue comes in:
 *
 * - `event`: the rule's dead-letter config (EventBridge gave up delivering,
 *   or the event was refused at once): the message body is the event itself,
 *   the EventBridge envelope with its `detail`.
 * - `invocation-record`: pod-sync's on-failure destination (Lambda gave up
 *   after its retries): the body is Lambda's invocation record, whose
 *   `requestPayload` is the event pod-sync was invoked with.
 *
 * Either way the pod event detail is what gets redriven: events are hints,
 * and pod-sync reads the pod afresh whatever the detail says.
 */
export type DeadLetterShape = 'event' | 'invocation-record';

export type ParsedDeadLetter =
  | { shape: DeadLetterShape; detail: PodEventDetail }
  | { shape?: DeadLetterShape; error: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The pod event detail in a dead-letter message body, or why there is none (naming the field). */
export function parseDeadLetter(body: string): ParsedDeadLetter {
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return { error: 'body: not JSON' };
  }
  if (!isRecord(message)) return { error: 'body: not a JSON object' };
  const record = 'requestContext' in message || 'requestPayload' in message;
  const shape: DeadLetterShape = record ? 'invocation-record' : 'event';
  const event = record ? message.requestPayload : message;
  try {
    return { shape, detail: parsePodEvent(event).detail };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { shape, error: record ? `requestPayload: ${why}` : why };
  }
}
