import type { PodEventDetail } from '../events/pod-event.ts';
import { type EventPublisher, PublishError } from '../events/publisher.ts';
import type { Logger } from '../log/logger.ts';
import { type DeadLetterShape, parseDeadLetter } from './dead-letter.ts';
import type { DeadLetterMessage, DeadLetterQueue } from './queue.ts';

/**
 * Redrives pod-sync's dead-letter queue: every message that holds a pod
 * event (either shape, dead-letter.ts) is published to the pod event bus
 * again and deleted only once the bus accepted it. SQS's own redrive (a
 * message move task) cannot do this: it moves messages between queues only,
 * and one of the two shapes is not an event at all.
 *
 * Safe to run twice, one after the other or at once: a message is deleted
 * only after its event was published, so a crash or a failed publish leaves
 * it in the queue (visible again after the visibility timeout), and an event
 * published twice is harmless (pod-sync is a level-triggered reconcile).
 * Messages that hold no pod event stay in the queue and are reported.
 */
export interface RedriveOptions {
  queue: DeadLetterQueue;
  publisher: EventPublisher;
  log: Logger;
  /** Stop after this many messages. Default: until the queue is empty. */
  maxMessages?: number;
  /** How long received messages stay hidden from others. Default 120 s. */
  visibilityTimeoutSeconds?: number;
  /** Parse and report only: publish and delete nothing. */
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface RedriveResult {
  received: number;
  /** Published to the bus and deleted from the queue. */
  redriven: number;
  byShape: Record<DeadLetterShape, number>;
  /** Published but not deleted (they come back; publishing them again is harmless). */
  notDeleted: number;
  /** Not pod events: left in the queue. */
  kept: Array<{ id: string; error: string }>;
  /** Pod events that would be redriven (dryRun). */
  wouldRedrive: number;
  /** Pod events the bus did not accept after the publisher's retries: left in the queue, and the run stopped. */
  notPublished: number;
}

/** Receives batches of up to 10 until the queue has nothing new, or `maxMessages` is reached. */
export async function redriveDeadLetters(options: RedriveOptions): Promise<RedriveResult> {
  const { queue, log } = options;
  const max = options.maxMessages ?? Number.POSITIVE_INFINITY;
  const visibility = options.visibilityTimeoutSeconds ?? 120;
  const result: RedriveResult = {
    received: 0,
    redriven: 0,
    byShape: { event: 0, 'invocation-record': 0 },
    notDeleted: 0,
    kept: [],
    wouldRedrive: 0,
    notPublished: 0,
  };
  const seen = new Set<string>();
  while (result.received < max && !options.signal?.aborted) {
    const batch = (
      await queue.receive(Math.min(10, max - result.received), visibility, options.signal)
    ).filter((m) => !seen.has(m.id));
    // Nothing, or only messages this run kept already (their visibility ran out): done.
    if (batch.length === 0) break;
    for (const m of batch) seen.add(m.id);
    result.received += batch.length;
    const events: Array<{ message: DeadLetterMessage; detail: PodEventDetail; shape: DeadLetterShape }> = [];
    for (const message of batch) {
      const parsed = parseDeadLetter(message.body);
      if ('error' in parsed) {
        result.kept.push({ id: message.id, error: parsed.error });
        log.warn({ messageId: message.id, error: parsed.error }, 'dead letter is not a pod event: kept');
      } else events.push({ message, detail: parsed.detail, shape: parsed.shape });
    }
    if (options.dryRun) {
      result.wouldRedrive += events.length;
      continue;
    }
    if (events.length === 0) continue;
    const unpublished = await publishAll(
      options,
      events.map((e) => e.detail),
    );
    const published = events.filter((e) => !unpublished.has(e.detail));
    const failed = new Set(
      await queue.delete(
        published.map((e) => e.message),
        options.signal,
      ),
    );
    for (const e of published) {
      if (failed.has(e.message.receiptHandle)) result.notDeleted++;
      else {
        result.redriven++;
        result.byShape[e.shape]++;
      }
    }
    result.notPublished += unpublished.size;
    if (unpublished.size > 0) {
      log.error(
        { notPublished: unpublished.size },
        'pod events not accepted by the bus: stopping (they stay queued)',
      );
      break;
    }
    log.info({ published: published.length, notDeleted: failed.size }, 'dead letters redriven');
  }
  return result;
}

/** Publishes the details; resolves with those the bus did not accept (none when all were). */
async function publishAll(options: RedriveOptions, details: PodEventDetail[]): Promise<Set<PodEventDetail>> {
  try {
    await options.publisher.publish(details, options.signal ? { signal: options.signal } : {});
    return new Set();
  } catch (err) {
    if (!(err instanceof PublishError)) throw err;
    options.log.warn({ err }, 'some dead letters not published');
    return new Set(err.failed.map((f) => f.detail));
  }
}
