import * as z from 'zod/mini';
import '../util/zod-mini.ts';

/** An EventBridge scheduled event, as delivered to a Lambda target by a schedule rule. */
const scheduledEventSchema = z.object({
  version: z.literal('0'),
  id: z.string().check(z.minLength(1)),
  'detail-type': z.literal('Scheduled Event'),
  source: z.literal('aws.events'),
  account: z.string(),
  time: z.string().check(z.minLength(1)),
  region: z.string(),
  resources: z.array(z.string()),
  detail: z.record(z.string(), z.unknown()),
});

export type ScheduledEvent = z.infer<typeof scheduledEventSchema>;

/** The event is not an EventBridge scheduled event; the message names each bad field. */
export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
}

/** Validates a scheduled event. @throws InvalidEventError naming each bad field. */
export function parseScheduledEvent(event: unknown): ScheduledEvent {
  const parsed = scheduledEventSchema.safeParse(event);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => `${i.path.join('.') || 'event'}: ${i.message}`);
  throw new InvalidEventError(`not an EventBridge scheduled event: ${fields.join('; ')}`);
}
