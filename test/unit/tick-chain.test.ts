import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEDUPLICATION_INTERVAL_MS, LocalSqsQueue } from '../../lib/local/local-sqs-queue.ts';
import { createLocalTickQueue } from '../../lib/local/queue-event-source.ts';
import {
  deduplicationId,
  restartGroup,
  slotAt,
  successorSlot,
  TICK_MESSAGE_GROUP,
} from '../../lib/tick/tick-slot.ts';
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

  it('a restart is not dropped for a slot a lost chain sent; a chain and a restart merge within a period', async () => {
    const clock = new FakeClock({ wall: 1_000_000_000_000 });
    const queue = new LocalSqsQueue({ clock, delayMs: PERIOD, visibilityTimeoutMs: 12_000 });
    const ticks = createLocalTickQueue(queue);
    // A chain that sent a slot and was lost (purged): the restart of that slot still goes out.
    await ticks.send({ slot: slotAt(clock.now(), PERIOD) + 1, sender: 'next', group: TICK_MESSAGE_GROUP });
    queue.purge();
    await ticks.send({ slot: slotAt(clock.now(), PERIOD) + 1, sender: 'restart', group: TICK_MESSAGE_GROUP });
    assert.equal(queue.peek().length, 1);
    queue.purge();
    await clock.advance(DEDUPLICATION_INTERVAL_MS);
    // A chain, and a second one started 4.3 s later (a redelivered message, or a keeper's restart).
    await ticks.send({ slot: slotAt(clock.now(), PERIOD) + 1, sender: 'next', group: TICK_MESSAGE_GROUP });
    await clock.advance(4_300);
    await ticks.send({ slot: slotAt(clock.now(), PERIOD) + 1, sender: 'restart', group: TICK_MESSAGE_GROUP });
    const processed: number[] = [];
    // Each tick takes 400 ms after its message arrives and sends its successor at once.
    for (let step = 0; step < 600; step++) {
      const [m] = await queue.receiveMessage();
      if (m) {
        const { slot } = JSON.parse(m.body) as TickMessage;
        processed.push(clock.now());
        await ticks.send({
          slot: successorSlot(slot, clock.now(), PERIOD),
          sender: 'next',
          group: m.groupId,
        });
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

  it('a chain the keeper starts in a group of its own merges with a stuck chain that moves again', async () => {
    const clock = new FakeClock({ wall: 1_000_000_000_000 });
    const queue = new LocalSqsQueue({ clock, delayMs: PERIOD, visibilityTimeoutMs: 12_000 });
    const ticks = createLocalTickQueue(queue);
    const first = slotAt(clock.now(), PERIOD) + 1;
    await ticks.send({ slot: first, sender: 'next', group: TICK_MESSAGE_GROUP });
    // The keeper found the leases stale behind that chain's head and started one in a group of its own.
    await clock.advance(3_700);
    const restart = slotAt(clock.now(), PERIOD) + 1;
    await ticks.send({ slot: restart, sender: 'restart', group: restartGroup(restart) });
    assert.deepEqual(
      queue.peek().map((m) => m.groupId),
      [TICK_MESSAGE_GROUP, restartGroup(restart)],
    );
    // Both groups are delivered at once (as Lambda's event source mapping does for a FIFO queue);
    // each tick takes 400 ms and sends its successor to its own group first.
    const processed: Array<{ at: number; group: string }> = [];
    const inFlight: Array<{ receiptHandle: string; doneAt: number }> = [];
    for (let step = 0; step < 600; step++) {
      for (const m of await queue.receiveMessage({ maxMessages: 10 })) {
        const { slot } = JSON.parse(m.body) as TickMessage;
        processed.push({ at: clock.now(), group: m.groupId });
        await ticks.send({
          slot: successorSlot(slot, clock.now(), PERIOD),
          sender: 'next',
          group: m.groupId,
        });
        inFlight.push({ receiptHandle: m.receiptHandle, doneAt: clock.now() + 400 });
      }
      await clock.advance(100);
      for (const done of inFlight.filter((f) => f.doneAt <= clock.now())) {
        queue.deleteMessage(done.receiptHandle);
        inFlight.splice(inFlight.indexOf(done), 1);
      }
    }
    // Two ticks in the first period at most, then one chain: one tick per period, one message queued.
    const byPeriod = new Map<number, number>();
    for (const p of processed)
      byPeriod.set(slotAt(p.at, PERIOD), (byPeriod.get(slotAt(p.at, PERIOD)) ?? 0) + 1);
    const counts = [...byPeriod.values()];
    assert.ok(counts.filter((c) => c > 1).length <= 1, `ticks per period: ${counts.join(',')}`);
    assert.ok(
      counts.slice(2).every((c) => c === 1),
      `ticks per period: ${counts.join(',')}`,
    );
    assert.equal(queue.peek().length, 1);
  });
});

describe('tick triggers', () => {
  const record = (body: string, receiveCount = '1', messageId = 'm-1') => ({
    messageId,
    receiptHandle: 'r',
    body,
    attributes: { ApproximateReceiveCount: receiveCount, MessageGroupId: 'restart-7' },
    eventSource: 'aws:sqs',
  });

  it('reads the slot, the receive count and the group of a chain message', () => {
    assert.deepEqual(parseTickTrigger({ Records: [record('{"v":1,"slot":42}', '3')] }), {
      kind: 'chain',
      slot: 42,
      receiveCount: 3,
      messageId: 'm-1',
      group: 'restart-7',
      rejected: [],
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

  it('rejects a body that is not a tick message, naming what is wrong but never quoting it', () => {
    const secret = 'AKIA-not-to-be-logged';
    const cases: Array<[string, RegExp]> = [
      [`${secret}{`, /^body: not JSON \(\d+ characters\)$/],
      [JSON.stringify({ v: 2, slot: 7, note: secret }), /^body: v: /],
      ['', /^body: empty$/],
      ['   ', /^body: empty$/],
      ['{"v":1,"slot":-1}', /^body: slot: /],
      [JSON.stringify({ v: 1, slot: 3, [secret]: 1 }), /^body: message: /],
      ['[1,2]', /^body: message: /],
    ];
    for (const [body, reason] of cases) {
      const trigger = parseTickTrigger({ Records: [record(body)] });
      assert.equal(trigger.kind, 'rejected', body);
      assert.ok(trigger.kind === 'rejected');
      assert.equal(trigger.group, 'restart-7');
      assert.equal(trigger.rejected.length, 1);
      assert.equal(trigger.rejected[0]?.messageId, 'm-1');
      assert.match(trigger.rejected[0]?.reason ?? '', reason, body);
      assert.ok(!JSON.stringify(trigger).includes(secret), JSON.stringify(trigger));
    }
  });

  it('takes the newest slot of a batch and reports the rest of it that is not a tick message', () => {
    const trigger = parseTickTrigger({
      Records: [
        record('{"v":1,"slot":4}', '1', 'a'),
        record('nope', '2', 'b'),
        record('{"v":1,"slot":5}', '2', 'c'),
      ],
    });
    assert.deepEqual(trigger, {
      kind: 'chain',
      slot: 5,
      receiveCount: 2,
      messageId: 'c',
      group: 'restart-7',
      rejected: [{ messageId: 'b', reason: 'body: not JSON (4 characters)' }],
    });
  });

  it('a record without a group is of the usual one', () => {
    const { MessageGroupId: _, ...attributes } = record('{"v":1,"slot":1}').attributes;
    const trigger = parseTickTrigger({ Records: [{ ...record('{"v":1,"slot":1}'), attributes }] });
    assert.ok(trigger.kind === 'chain');
    assert.equal(trigger.group, TICK_MESSAGE_GROUP);
  });

  it('names what is wrong with an event that is not of the queue nor of the schedule', () => {
    assert.throws(
      () => parseTickTrigger({ Records: [record('{"v":1,"slot":1}', 'x')] }),
      /Records\.0\.attributes\.ApproximateReceiveCount/,
    );
    assert.throws(() => parseTickTrigger({ Records: [] }), /Records/);
    assert.throws(
      () => parseTickTrigger({ Records: [{ ...record('{"v":1,"slot":1}'), eventSource: 'aws:kinesis' }] }),
      /eventSource/,
    );
    assert.throws(() => parseTickTrigger({ hello: 1 }), /not an EventBridge scheduled event/);
  });
});
