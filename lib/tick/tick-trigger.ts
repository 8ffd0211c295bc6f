import * as z from 'zod/mini';
import '../util/zod-mini.ts';
import { InvalidEventError, parseScheduledEvent } from '../events/scheduled-event.ts';
import { TICK_MESSAGE_GROUP } from './tick-slot.ts';

/** The body of a tick message: the slot it stands for (lib/tick/tick-slot.ts). */
export const tickMessageSchema = z.strictObject({
  v: z.literal(1),
  slot: z.number().check(z.int(), z.nonnegative()),
});

export type TickMessage = z.infer<typeof tickMessageSchema>;

/** A message of the tick queue whose body is not a tick message: dropped, never delivered again. */
export interface RejectedTick {
  messageId: string;
  /** What is wrong with the body, naming the field; never the body itself. */
  reason: string;
}

/**
 * What started a tick invocation: a message of the chain (delivered by the
 * queue's event source mapping), messages of the queue that are not tick
 * messages (a schema of another release, a message sent by hand, a
 * truncated body), or the once-a-minute schedule that keeps the chain alive.
 *
 * A rejected message is still a delivery of the chain's message group: the
 * invocation must succeed, so that the queue deletes it instead of
 * delivering it again before everything behind it (FIFO) until its
 * retention runs out, and it must send a successor, since it may have been
 * the chain's only message.
 */
export type TickTrigger =
  | {
      kind: 'chain';
      /** The highest slot of the batch (one message per batch as deployed). */
      slot: number;
      /** How often the queue has delivered this message: above 1 after a crash or a timeout. */
      receiveCount: number;
      messageId: string;
      /** The message group the chain runs in: its successor goes to the same one. */
      group: string;
      /** Messages of the batch that were not tick messages. */
      rejected: RejectedTick[];
    }
  | { kind: 'rejected'; group: string; rejected: RejectedTick[] }
  | { kind: 'keeper'; time: string };

const sqsRecordSchema = z.object({
  messageId: z.string().check(z.minLength(1)),
  body: z.string(),
  eventSource: z.literal('aws:sqs'),
  attributes: z.object({
    ApproximateReceiveCount: z.string().check(z.regex(/^\d+$/, 'must be a count')),
    MessageGroupId: z.optional(z.string().check(z.minLength(1))),
  }),
});

const sqsEventSchema = z.object({ Records: z.array(sqsRecordSchema).check(z.minLength(1)) });

function fieldsOf(error: z.core.$ZodError, root = 'event'): string {
  return error.issues
    .map((i) => {
      // Zod names unknown keys in its message; a body's keys are its content, never logged.
      const message = i.code === 'unrecognized_keys' ? `${i.keys.length} unknown field(s)` : i.message;
      return `${i.path.join('.') || root}: ${message}`;
    })
    .join('; ');
}

/** The message a body stands for, or what is wrong with it (never quoting it: it may be anything). */
function parseBody(body: string): TickMessage | { reason: string } {
  if (body.trim() === '') return { reason: 'body: empty' };
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { reason: `body: not JSON (${body.length} characters)` };
  }
  const parsed = tickMessageSchema.safeParse(json);
  return parsed.success ? parsed.data : { reason: `body: ${fieldsOf(parsed.error, 'message')}` };
}

/**
 * Parses an SQS event of the tick queue or an EventBridge scheduled event.
 * A record whose body is not a tick message does not fail the parse: it is
 * returned as rejected (see {@link TickTrigger}).
 * @throws InvalidEventError naming each bad field, for an event that is
 * neither an SQS event (as Lambda's event source mapping builds it) nor a
 * scheduled event.
 */
export function parseTickTrigger(event: unknown): TickTrigger {
  if (typeof event === 'object' && event !== null && 'Records' in event) {
    const parsed = sqsEventSchema.safeParse(event);
    if (!parsed.success) throw new InvalidEventError(`not an SQS event of ticks: ${fieldsOf(parsed.error)}`);
    const rejected: RejectedTick[] = [];
    let newest: { slot: number; record: (typeof parsed.data.Records)[number] } | undefined;
    for (const record of parsed.data.Records) {
      const message = parseBody(record.body);
      if ('reason' in message) rejected.push({ messageId: record.messageId, reason: message.reason });
      else if (!newest || message.slot > newest.slot) newest = { slot: message.slot, record };
    }
    const first = parsed.data.Records[0];
    const group = (newest?.record ?? first)?.attributes.MessageGroupId ?? TICK_MESSAGE_GROUP;
    if (!newest) return { kind: 'rejected', group, rejected };
    return {
      kind: 'chain',
      slot: newest.slot,
      receiveCount: Number(newest.record.attributes.ApproximateReceiveCount),
      messageId: newest.record.messageId,
      group,
      rejected,
    };
  }
  const scheduled = parseScheduledEvent(event);
  return { kind: 'keeper', time: scheduled.time };
}
