import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEDUPLICATION_INTERVAL_MS,
  LocalSqsQueue,
  ReceiptHandleInvalidError,
} from '../../lib/local/local-sqs-queue.ts';
import { FakeClock } from '../support/fake-clock.ts';

const send = (q: LocalSqsQueue, id: string, group = 'g') =>
  q.sendMessage({ body: id, groupId: group, deduplicationId: id });

describe('the in-process SQS FIFO queue', () => {
  it('hides every message for the queue-level delay', async () => {
    const clock = new FakeClock();
    const q = new LocalSqsQueue({ clock, delayMs: 10_000, visibilityTimeoutMs: 12_000 });
    send(q, 'a');
    assert.deepEqual(await q.receiveMessage(), []);
    assert.deepEqual(q.counts(), { visible: 0, inFlight: 0, delayed: 1 });
    await clock.advance(10_000);
    const [m] = await q.receiveMessage();
    assert.equal(m?.body, 'a');
    assert.equal(m?.receiveCount, 1);
    assert.deepEqual(q.counts(), { visible: 0, inFlight: 1, delayed: 0 });
  });

  it('accepts and drops a deduplication id sent again within five minutes, also after the first was deleted', async () => {
    const clock = new FakeClock();
    const q = new LocalSqsQueue({ clock, visibilityTimeoutMs: 1_000 });
    const first = send(q, 'a');
    assert.equal(first.duplicate, false);
    const [m] = await q.receiveMessage();
    q.deleteMessage(m?.receiptHandle ?? '');
    assert.deepEqual(send(q, 'a'), { messageId: first.messageId, duplicate: true });
    assert.deepEqual(await q.receiveMessage(), []);
    await clock.advance(DEDUPLICATION_INTERVAL_MS);
    assert.equal(send(q, 'a').duplicate, false);
    assert.equal((await q.receiveMessage()).length, 1);
  });

  it('delivers a group one message at a time, in order: none while an earlier one is in flight', async () => {
    const clock = new FakeClock();
    const q = new LocalSqsQueue({ clock, visibilityTimeoutMs: 5_000 });
    send(q, 'a');
    send(q, 'b');
    send(q, 'x', 'other');
    const first = await q.receiveMessage({ maxMessages: 10 });
    assert.deepEqual(
      first.map((m) => m.body),
      ['a', 'x'],
      'the head of each group, never two of one group while the first is in flight',
    );
    assert.deepEqual(await q.receiveMessage({ maxMessages: 10 }), []);
    q.deleteMessage(first[0]?.receiptHandle ?? '');
    assert.deepEqual(
      (await q.receiveMessage()).map((m) => m.body),
      ['b'],
    );
  });

  it('delivers a message again after its visibility timeout, before the rest of its group, with a new handle', async () => {
    const clock = new FakeClock();
    const q = new LocalSqsQueue({ clock, visibilityTimeoutMs: 12_000 });
    send(q, 'a');
    send(q, 'b');
    const [first] = await q.receiveMessage();
    await clock.advance(11_999);
    assert.deepEqual(await q.receiveMessage(), [], 'still in flight, and b waits behind it');
    await clock.advance(1);
    const [again] = await q.receiveMessage();
    assert.equal(again?.body, 'a');
    assert.equal(again?.receiveCount, 2);
    assert.notEqual(again?.receiptHandle, first?.receiptHandle);
    assert.throws(() => q.deleteMessage(first?.receiptHandle ?? ''), ReceiptHandleInvalidError);
    q.deleteMessage(again?.receiptHandle ?? '');
    assert.equal((await q.receiveMessage())[0]?.body, 'b');
  });

  it('refuses a receipt handle whose visibility timeout ran out (FIFO), so the message is delivered again', async () => {
    const clock = new FakeClock();
    const q = new LocalSqsQueue({ clock, visibilityTimeoutMs: 1_000 });
    send(q, 'a');
    const [m] = await q.receiveMessage();
    await clock.advance(1_000);
    assert.throws(() => q.deleteMessage(m?.receiptHandle ?? ''), /expired/);
    assert.equal((await q.receiveMessage())[0]?.receiveCount, 2);
  });

  it('long polling waits for the delay to end, for a send, or returns nothing after the wait', async () => {
    const clock = new FakeClock();
    const q = new LocalSqsQueue({ clock, delayMs: 3_000, visibilityTimeoutMs: 60_000 });
    send(q, 'a');
    let received: string[] | undefined;
    const first = q.receiveMessage({ waitMs: 20_000 }).then((r) => {
      received = r.map((m) => m.body);
    });
    await clock.advance(2_999);
    assert.equal(received, undefined);
    await clock.advance(1);
    await first;
    assert.deepEqual(received, ['a']);

    const other = new LocalSqsQueue({ clock, visibilityTimeoutMs: 60_000 });
    const waiting = other.receiveMessage({ waitMs: 20_000 });
    await clock.advance(1_000);
    send(other, 'b');
    assert.deepEqual(
      (await waiting).map((m) => m.body),
      ['b'],
    );
    const empty = other.receiveMessage({ waitMs: 20_000 });
    await clock.advance(20_000);
    assert.deepEqual(await empty, [], 'b is in flight: nothing to receive within the wait');
    assert.equal(other.requests.ReceiveMessage, 2);
  });
});
