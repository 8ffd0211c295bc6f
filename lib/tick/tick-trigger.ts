import * as z from 'zod/mini';
import '../util/zod-mini.ts';
import { InvalidEventError, parseScheduledEvent } from '../events/scheduled-event.ts';

/** The body of a tick message: the slot it stands for (lib/tick/tick-slot.ts). */
export const tickMessageSchema = z.strictObject({
  v: z.literal(1),
  slot: z.number().check(z.int(), z.nonnegative()),
});

export type TickMessage = z.infer<typeof tickMessageSchema>;

/**
 * What started a tick invocation: a message of the chain (delivered by the
 * queue's event source mapping), or the once-a-minute schedule that keeps
 * the chain alive.
 */
export type TickTrigger =
  | {
      kind: 'chain';
      /** The highest slot of the batch (one message per batch as deployed). */
      slot: number;
      /** How often the queue has delivered this message: above 1 after a crash or a timeout. */
      receiveCount: number;
      messageId: string;
    }
  | { kind: 'keeper'; time: string };

const sqsRecordSchema = z.object({
  messageId: z.string().check(z.minLength(1)),
  body: z.string(),
  eventSource: z.literal('aws:sqs'),
  attributes: z.object({ ApproximateReceiveCount: z.string().check(z.regex(/^\d+$/, 'must be a count')) }),
});

const sqsEventSchema = z.object({ Records: z.array(sqsRecordSchema).check(z.minLength(1)) });

function fieldsOf(error: z.core.$ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'event'}: ${i.message}`).join('; ');
}

function parseBody(body: string, index: number): TickMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidEventError(`Records.${index}.body: not JSON`);
  }
  const parsed = tickMessageSchema.safeParse(json);
  if (!parsed.success) throw new InvalidEventError(`Records.${index}.body: ${fieldsOf(parsed.error)}`);
  return parsed.data;
}

/**
 * Parses an SQS event of the tick queue or an EventBridge scheduled event.
 * @throws InvalidEventError naming each bad field, for anything else.
 */
export function parseTickTrigger(event: unknown): TickTrigger {
  if (typeof event === 'object' && event !== null && 'Records' in event) {
    const parsed = sqsEventSchema.safeParse(event);
    if (!parsed.success) throw new InvalidEventError(`not an SQS event of ticks: ${fieldsOf(parsed.error)}`);
    const records = parsed.data.Records;
    const messages = records.map((r, i) => parseBody(r.body, i));
    let newest = 0;
    messages.forEach((m, i) => {
      if (m.slot > (messages[newest]?.slot ?? -1)) newest = i;
    });
    const record = records[newest];
    const message = messages[newest];
    if (!record || !message) throw new InvalidEventError('Records: empty');
    return {
      kind: 'chain',
      slot: message.slot,
      receiveCount: Number(record.attributes.ApproximateReceiveCount),
      messageId: record.messageId,
    };
  }
  const scheduled = parseScheduledEvent(event);
  return { kind: 'keeper', time: scheduled.time };
}
