/**
 * The pod event publisher over the in-process EventBridge bus: batching,
 * resending only the failed entries, bounded retries, and rejecting bad
 * details before anything is sent.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import {
  hintResource,
  MAX_POD_EVENT_DETAIL_BYTES,
  POD_EVENT_DETAIL_TYPE,
  POD_EVENT_SOURCE,
  type PodEventDetail,
} from '../../lib/events/pod-event.ts';
import {
  InvalidPodEventDetailError,
  PodEventPublisher,
  type PodEventPublisherOptions,
  PublishError,
  type PutEventsEntry,
} from '../../lib/events/publisher.ts';
import { LocalEventBus } from '../../lib/local/event-bus.ts';
import { createLocalBusPublisher } from '../../lib/local/local-bus-publisher.ts';
import { FakeClock } from '../support/fake-clock.ts';

/** Sleeps are recorded and return at once: the retry schedule is checked, not waited for. */
function recordingClock(): FakeClock {
  return new FakeClock({ autoAdvance: true });
}

function details(count: number, prefix = 'pod'): PodEventDetail[] {
  return Array.from({ length: count }, (_, i) => ({
    v: 1,
    type: 'ADDED',
    node: 'vk-1',
    namespace: 'default',
    name: `${prefix}-${i}`,
    uid: `uid-${i}`,
    resourceVersion: String(100 + i),
  }));
}

/** A publisher on a fresh bus, with every PutEvents call recorded. */
function onBus(options: Omit<PodEventPublisherOptions, 'send'> = {}) {
  const bus = new LocalEventBus();
  const calls: PutEventsEntry[][] = [];
  const clock = recordingClock();
  const publisher = new PodEventPublisher({
    clock,
    random: () => 1,
    ...options,
    send: (entries) => {
      calls.push(entries);
      return bus.putEvents(entries);
    },
  });
  return { bus, calls, clock, publisher };
}

const nameOf = (entry: PutEventsRequestEntry | PutEventsEntry) =>
  (JSON.parse(entry.Detail ?? '{}') as PodEventDetail).name;

describe('pod event publisher', () => {
  it('sends each detail’s resources (pod-watch’s hints) with it, and none when there are none', async () => {
    const { bus, publisher } = onBus();
    const hint = hintResource('unchanged');
    await publisher.publish(details(3), { resources: [[hint], undefined, []] });
    assert.deepEqual(
      bus.published.map((e) => e.resources),
      [[hint], [], []],
    );
  });

  it('publishes 25 details in 3 PutEvents calls of at most 10 entries, with our source and detail-type', async () => {
    const { bus, calls, publisher } = onBus({ busName: 'svk-bus' });
    await publisher.publish(details(25));
    assert.deepEqual(
      calls.map((c) => c.length),
      [10, 10, 5],
    );
    assert.equal(bus.published.length, 25);
    for (const entry of calls.flat()) {
      assert.equal(entry.Source, POD_EVENT_SOURCE);
      assert.equal(entry.DetailType, POD_EVENT_DETAIL_TYPE);
      assert.equal(entry.EventBusName, 'svk-bus');
    }
    assert.deepEqual(
      bus.published.map((e) => e.detail),
      details(25),
      'each event carries its detail unchanged',
    );
  });

  it('resends only the entries that failed, until they are accepted', async () => {
    const { bus, calls, clock, publisher } = onBus();
    const failures = new Map<string, number>([
      ['pod-3', 2],
      ['pod-17', 1],
    ]);
    bus.failEntries((entry) => {
      const left = failures.get(nameOf(entry)) ?? 0;
      failures.set(nameOf(entry), left - 1);
      return left > 0;
    }, 'ThrottlingException');
    await publisher.publish(details(25));
    assert.deepEqual(
      calls.map((c) => c.map(nameOf)),
      [
        details(10).map((d) => d.name),
        details(20)
          .slice(10)
          .map((d) => d.name),
        details(25)
          .slice(20)
          .map((d) => d.name),
        ['pod-3', 'pod-17'],
        ['pod-3'],
      ],
    );
    assert.equal(bus.published.length, 25, 'every detail published once');
    assert.deepEqual(new Set(bus.published.map((e) => e.detail.name)).size, 25);
    assert.deepEqual(clock.sleeps, [100, 200], 'backoff doubles between resends');
  });

  it('throws PublishError naming the entries that still failed after the retries; the others are published', async () => {
    const { bus, calls, publisher } = onBus({ maxAttempts: 3 });
    bus.failEntries((entry) => nameOf(entry) === 'pod-4');
    const error = await publisher.publish(details(12)).then(
      () => assert.fail('publish should fail'),
      (err: unknown) => err,
    );
    assert.ok(error instanceof PublishError);
    assert.deepEqual(
      error.failed.map((f) => [f.detail.name, f.errorCode]),
      [['pod-4', 'InternalFailure']],
    );
    assert.equal(error.publishedCount, 11);
    assert.match(
      error.message,
      /1 pod event\(s\) not published \(InternalFailure\), e.g. ADDED default\/pod-4/,
    );
    assert.equal(calls.length, 2 + 2, 'two batches, then two resends of the one failed entry');
    assert.equal(bus.published.length, 11);
  });

  it('rejects an oversized detail before sending anything, giving its size', async () => {
    const { bus, calls, publisher } = onBus();
    const big = { ...details(1)[0], uid: 'u'.repeat(MAX_POD_EVENT_DETAIL_BYTES) } as PodEventDetail;
    await assert.rejects(
      () => publisher.publish([...details(3), big]),
      (err: unknown) =>
        err instanceof InvalidPodEventDetailError &&
        /default\/pod-0 is \d+ bytes, over the 4096-byte limit/.test(err.message),
    );
    assert.equal(calls.length, 0);
    assert.equal(bus.published.length, 0, 'nothing was published');
  });

  it('rejects a detail that does not match the schema, naming the field, before sending anything', async () => {
    const { bus, calls, publisher } = onBus();
    const bad = { ...details(1)[0], namespace: 'Not_A_Namespace' } as PodEventDetail;
    await assert.rejects(
      () => publisher.publish([...details(2), bad]),
      (err: unknown) => err instanceof InvalidPodEventDetailError && /namespace: must be/.test(err.message),
    );
    assert.equal(calls.length, 0);
    assert.equal(bus.published.length, 0);
  });

  it('the largest detail the schema allows fits under the size limit', async () => {
    const bus = new LocalEventBus();
    const publisher = createLocalBusPublisher(bus);
    const label = (c: string, n: number) => c.repeat(n);
    const largest: PodEventDetail = {
      v: 1,
      type: 'MODIFIED',
      node: `${label('n', 63)}.${label('n', 63)}.${label('n', 63)}.${label('n', 61)}`,
      namespace: label('s', 63),
      name: `${label('p', 63)}.${label('p', 63)}.${label('p', 63)}.${label('p', 61)}`,
      uid: label('u', 64),
      resourceVersion: label('9', 20),
    };
    await publisher.publish([largest]);
    assert.equal(bus.published.length, 1);
  });

  it('gives up at once on a request EventBridge rejects as malformed, and retries a throttled request', async () => {
    let sends = 0;
    const clock = recordingClock();
    const throttled = new PodEventPublisher({
      clock,
      random: () => 1,
      send: async (entries) => {
        sends++;
        if (sends === 1)
          throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $fault: 'client' });
        return { FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `e${i}` })) };
      },
    });
    await throttled.publish(details(3));
    assert.equal(sends, 2);

    let rejectedSends = 0;
    const rejecting = new PodEventPublisher({
      clock,
      send: async () => {
        rejectedSends++;
        throw Object.assign(new Error('bad request'), { name: 'ValidationException', $fault: 'client' });
      },
    });
    const error = await rejecting.publish(details(3)).catch((err: unknown) => err);
    assert.ok(error instanceof PublishError);
    assert.equal(rejectedSends, 1);
    assert.equal(error.failed[0]?.errorCode, 'ValidationException');
  });

  it('sends nothing for no details', async () => {
    const { calls, publisher } = onBus();
    await publisher.publish([]);
    assert.equal(calls.length, 0);
  });
});
