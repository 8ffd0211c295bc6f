/**
 * `npm run redrive` against the real SQSClient with only its transport
 * replaced (test/support/memory-sqs.ts: no SQS can run here) and the
 * in-process event bus. The dead letters are made by the bus itself (a
 * pod-sync rule whose target fails), in both shapes the queue holds: the
 * rule's raw events and Lambda's invocation records.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { parseDeadLetter } from '../../lib/dead-letters/dead-letter.ts';
import { redriveDeadLetters } from '../../lib/dead-letters/redrive.ts';
import { SqsDeadLetterQueue } from '../../lib/dead-letters/sqs-queue.ts';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE, type PodEventDetail } from '../../lib/events/pod-event.ts';
import { LocalEventBus } from '../../lib/local/event-bus.ts';
import { createLocalBusPublisher } from '../../lib/local/local-bus-publisher.ts';
import type { BusEvent } from '../../lib/local/put-events-entry.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { MemorySqs } from '../support/memory-sqs.ts';

const log = createLogger({ level: 'silent' });

const detail = (name: string): PodEventDetail => ({
  v: 1,
  type: 'ADDED',
  node: 'vk-1',
  namespace: 'default',
  name,
  uid: `uid-${name}`,
  resourceVersion: '42',
});

/** Dead letters as the bus makes them: a pod-sync rule whose target keeps failing. */
async function deadLetteredEvents(names: string[]): Promise<BusEvent[]> {
  const bus = new LocalEventBus();
  bus.addRule({
    name: 'pod-sync',
    pattern: { source: [POD_EVENT_SOURCE], 'detail-type': [POD_EVENT_DETAIL_TYPE] },
    target: async () => {
      throw Object.assign(new Error('pod-sync failed'), { retryable: false });
    },
  });
  await createLocalBusPublisher(bus).publish(names.map(detail));
  await bus.whenIdle();
  assert.equal(bus.deadLetters.length, names.length);
  return bus.deadLetters.map((d) => d.event);
}

/** Lambda's on-failure destination record for an asynchronous invocation with `event`. */
function invocationRecord(event: BusEvent): string {
  return JSON.stringify({
    version: '1.0',
    timestamp: '2026-11-23T00:00:00.000Z',
    requestContext: {
      requestId: 'c0ffee00-0000-4000-8000-000000000000',
      functionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:svk-prod-podSync:$LATEST',
      condition: 'RetriesExhausted',
      approximateInvokeCount: 3,
    },
    requestPayload: event,
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    responsePayload: { errorType: 'PodSyncRetryError', errorMessage: 'provider unavailable' },
  });
}

/** A DLQ holding `bodies`, sent through the real client; and the bus the redrive publishes to. */
async function setUp(bodies: string[]) {
  const sqs = new MemorySqs();
  const client = sqs.client();
  for (const body of bodies)
    await client.send(new SendMessageCommand({ QueueUrl: sqs.url, MessageBody: body }));
  const bus = new LocalEventBus();
  const publisher = createLocalBusPublisher(bus, { baseDelayMs: 1, maxDelayMs: 2 });
  const queue = new SqsDeadLetterQueue(sqs.url, client);
  const redrive = (extra: { dryRun?: boolean; maxMessages?: number } = {}) =>
    redriveDeadLetters({ queue, publisher, log, ...extra });
  const names = () => bus.published.map((e) => (e.detail as unknown as PodEventDetail).name).sort();
  return { sqs, bus, queue, redrive, names };
}

describe('redriving the dead-letter queue', () => {
  it('publishes the pod events of both shapes to the bus, deletes them, and keeps what is not a pod event', async () => {
    const [raw, failed] = await deadLetteredEvents(['raw', 'retried']);
    assert.ok(raw && failed);
    const { sqs, redrive, names } = await setUp([
      JSON.stringify(raw),
      invocationRecord(failed),
      'not json',
      JSON.stringify({ ...raw, detail: { ...raw.detail, uid: '' } }),
    ]);
    const result = await redrive();
    assert.deepEqual(names(), ['raw', 'retried']);
    assert.equal(result.redriven, 2);
    assert.deepEqual(result.byShape, { event: 1, 'invocation-record': 1 });
    assert.deepEqual(
      result.kept.map((k) => k.error),
      ['body: not JSON', 'not a pod event: detail.uid: Too small: expected string to have >=1 characters'],
    );
    assert.equal(sqs.messages.length, 2, 'only the two messages that are not pod events stay');
  });

  it('is safe to run twice: the second run publishes nothing again', async () => {
    const events = await deadLetteredEvents(['a', 'b', 'c']);
    const { sqs, redrive, names, bus } = await setUp(events.map((e) => JSON.stringify(e)));
    await redrive();
    sqs.now += 10 * 60_000;
    const second = await redrive();
    assert.equal(second.received, 0);
    assert.deepEqual(names(), ['a', 'b', 'c']);
    assert.equal(bus.published.length, 3);
    assert.equal(sqs.messages.length, 0);
  });

  it('two runs at once lose nothing and redrive every event', async () => {
    const events = await deadLetteredEvents(Array.from({ length: 25 }, (_, i) => `p${i}`));
    const { sqs, redrive, names } = await setUp(events.map((e) => JSON.stringify(e)));
    const [one, two] = await Promise.all([redrive(), redrive()]);
    assert.equal(one.redriven + two.redriven, 25);
    assert.deepEqual(names(), events.map((e) => (e.detail as unknown as PodEventDetail).name).sort());
    assert.equal(sqs.messages.length, 0);
  });

  it('an event the bus does not accept stays in the queue, and a later run redrives it', async () => {
    const events = await deadLetteredEvents(['ok', 'refused']);
    const { sqs, bus, redrive, names } = await setUp(events.map((e) => JSON.stringify(e)));
    bus.failEntries((entry) => (entry.Detail ?? '').includes('"refused"'));
    const first = await redrive();
    assert.equal(first.redriven, 1);
    assert.equal(first.notPublished, 1);
    assert.deepEqual(
      sqs.messages.map((m) => parseDeadLetter(m.body)).map((p) => ('detail' in p ? p.detail.name : p.error)),
      ['refused'],
    );
    bus.failEntries(undefined);
    sqs.now += 10 * 60_000;
    const second = await redrive();
    assert.equal(second.redriven, 1);
    assert.deepEqual(names(), ['ok', 'refused']);
    assert.equal(sqs.messages.length, 0);
  });

  it('a dry run publishes and deletes nothing', async () => {
    const events = await deadLetteredEvents(['d']);
    const { sqs, bus, redrive } = await setUp([JSON.stringify(events[0]), '{}']);
    const result = await redrive({ dryRun: true });
    assert.equal(result.wouldRedrive, 1);
    assert.equal(result.kept.length, 1);
    assert.equal(bus.published.length, 0);
    assert.equal(sqs.messages.length, 2);
  });

  it('the queue depth comes from the same client', async () => {
    const { queue } = await setUp(['{}', '{}']);
    assert.deepEqual(await queue.depth(), { visible: 2, inFlight: 0 });
  });
});
