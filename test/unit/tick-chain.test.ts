import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEDUPLICATION_INTERVAL_MS, LocalSqsQueue } from '../../lib/local/local-sqs-queue.ts';
import { createLocalTickQueue } from '../../lib/local/queue-event-source.ts';
import { deduplicationId, slotAt, successorSlot, tickFence } from '../../lib/tick/tick-slot.ts';
import { parseTickTrigger, type TickMessage } from '../../lib/tick/tick-trigger.ts';
import { FakeClock } from '../support/fake-clock.ts';

const PERIOD = 10_000;

describe('tick slots', () => {
  it('the successor is the next period, and always past the current slot', () => {
    assert.equal(slotAt(25_000, PERIOD), 2);
    assert.equal(successorSlot(undefined, 25_000, PERIOD), 3);
    assert.equal(successorSlot(2, 25_000, PERIOD), 3);
    // A clock a little behind the sender of the current message: still a new slot.
    assert.equal(successorSlot(3, 29_999, PERIOD), 4);
    assert.equal(successorSlot(7, 25_000, PERIOD), 8);
    assert.equal(deduplicationId(3), 'tick-3');
    assert.equal(deduplicationId(3, 'restart'), 'restart-3');
  });

  it('the fencing token grows with the slot, then with the deliveries of one message', () => {
    assert.ok(tickFence(5, 1) < tickFence(5, 2));
    assert.ok(tickFence(5, 999) < tickFence(6, 1));
    assert.equal(tickFence(5, 5000), tickFence(5, 999));
  });

  it('a restart is not dropped for a slot a lost chain sent; a chain and a restart merge within a period', async () => {
    const clock = new FakeClock({ wall: 1_000_000_000_000 });
    const queue = new LocalSqsQueue({ clock, delayMs: PERIOD, visibilityTimeoutMs: 12_000 });
    const ticks = createLocalTickQueue(queue);
    // A chain that sent a slot and was lost (purged): the restart of that slot still goes out.
    await ticks.send(slotAt(clock.now(), PERIOD) + 1, 'next');
    queue.purge();
    await ticks.send(slotAt(clock.now(), PERIOD) + 1, 'restart');
    assert.equal(queue.peek().length, 1);
    queue.purge();
    await clock.advance(DEDUPLICATION_INTERVAL_MS);
    // A chain, and a second one started 4.3 s later (a redelivered message, or a keeper's restart).
    await ticks.send(slotAt(clock.now(), PERIOD) + 1, 'next');
    await clock.advance(4_300);
    await ticks.send(slotAt(clock.now(), PERIOD) + 1, 'restart');
    const processed: number[] = [];
    // Each tick takes 400 ms after its message arrives and sends its successor at once.
    for (let step = 0; step < 600; step++) {
      const [m] = await queue.receiveMessage();
      if (m) {
        const { slot } = JSON.parse(m.body) as TickMessage;
        processed.push(clock.now());
        await ticks.send(successorSlot(slot, clock.now(), PERIOD), 'next');
        await clock.advance(400);
        queue.deleteMessage(m.receiptHandle);
      } else {
        await clock.advance(100);
      }
    }
    // 60 s: after the first periods, one tick per period and one message in the queue.
    const start = processed[0] ?? 0;
    const late = processed.filter((t) => t >= start + 25_000);
    const gaps = late.slice(1).map((t, i) => t - (late[i] ?? 0));
    assert.ok(
      gaps.every((g) => g >= PERIOD),
      `gaps ${gaps.join(', ')}`,
    );
    assert.equal(queue.peek().length, 1);
  });
});

describe('tick triggers', () => {
  const record = (body: string, receiveCount = '1') => ({
    messageId: 'm-1',
    receiptHandle: 'r',
    body,
    attributes: { ApproximateReceiveCount: receiveCount },
    eventSource: 'aws:sqs',
  });

  it('reads the slot and the receive count of a chain message', () => {
    assert.deepEqual(parseTickTrigger({ Records: [record('{"v":1,"slot":42}', '3')] }), {
      kind: 'chain',
      slot: 42,
      receiveCount: 3,
      messageId: 'm-1',
    });
  });

  it('takes a scheduled event for the keeper', () => {
    const trigger = parseTickTrigger({
      version: '0',
      id: 'e',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '1',
      time: '2026-01-01T00:00:00Z',
      region: 'us-east-1',
      resources: [],
      detail: {},
    });
    assert.deepEqual(trigger, { kind: 'keeper', time: '2026-01-01T00:00:00Z' });
  });

  it('names what is wrong with anything else', () => {
    assert.throws(() => parseTickTrigger({ Records: [record('nope')] }), /Records\.0\.body: not JSON/);
    assert.throws(
      () => parseTickTrigger({ Records: [record('{"v":1,"slot":-1}')] }),
      /Records\.0\.body: slot/,
    );
    assert.throws(
      () => parseTickTrigger({ Records: [record('{"v":1,"slot":1}', 'x')] }),
      /Records\.0\.attributes\.ApproximateReceiveCount/,
    );
    assert.throws(() => parseTickTrigger({ Records: [] }), /Records/);
    assert.throws(() => parseTickTrigger({ hello: 1 }), /not an EventBridge scheduled event/);
  });
});
