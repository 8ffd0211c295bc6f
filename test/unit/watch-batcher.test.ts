/**
 * The watch batcher: events published in order with the bookmark behind
 * them; a held event waiting for the DELETED of its uid, which supersedes
 * it (as virtual-kubelet's workqueue holds a key once), and published when
 * its hold ends or the watch drains.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodEventDetail } from '../../lib/events/pod-event.ts';
import type { EventPublisher } from '../../lib/events/publisher.ts';
import { WatchBatcher } from '../../lib/pod/watch/watch-batcher.ts';
import { FakeClock } from '../support/fake-clock.ts';

const FLUSH_MS = 200;

function event(type: PodEventDetail['type'], uid: string, resourceVersion: string): PodEventDetail {
  return { v: 1, type, node: 'vk-1', namespace: 'default', name: `pod-${uid}`, uid, resourceVersion };
}

function batcher() {
  const clock = new FakeClock();
  const published: string[][] = [];
  const resources: Array<Array<readonly string[] | undefined>> = [];
  const publisher: EventPublisher = {
    async publish(details, options) {
      published.push(details.map((d) => `${d.type} ${d.uid}`));
      resources.push([...(options?.resources ?? [])]);
    },
  };
  const bookmarks: string[] = [];
  const b = new WatchBatcher({
    publisher,
    clock,
    startResourceVersion: '0',
    flushMs: FLUSH_MS,
    signal: new AbortController().signal,
    onPublished: async (rv) => {
      bookmarks.push(rv);
    },
    onFailure: (err) => assert.fail(String(err)),
  });
  const push = (detail: PodEventDetail, holdMs?: number) =>
    b.push(detail, detail.resourceVersion, {
      resources: holdMs ? ['hint'] : [],
      ...(holdMs ? { holdMs } : {}),
    });
  return { clock, b, push, published, resources, bookmarks };
}

describe('WatchBatcher', () => {
  it('publishes in order after flushMs, and moves the bookmark behind what it published', async () => {
    const { clock, b, push, published, bookmarks } = batcher();
    push(event('ADDED', 'a', '1'));
    push(event('ADDED', 'b', '2'));
    b.push(undefined, '3');
    await clock.advance(FLUSH_MS - 1);
    assert.deepEqual(published, []);
    await clock.advance(1);
    assert.deepEqual(published, [['ADDED a', 'ADDED b']]);
    assert.deepEqual(bookmarks, ['3']);
    assert.equal(b.publishedResourceVersion, '3');
  });

  it('a DELETED event supersedes the held events of its uid, whose resourceVersions still count as passed', async () => {
    const { clock, b, push, published, bookmarks } = batcher();
    push(event('ADDED', 'a', '1'));
    push(event('ADDED', 'b', '2'));
    push(event('MODIFIED', 'a', '3'), 1_000);
    push(event('DELETED', 'a', '4'));
    await clock.advance(FLUSH_MS);
    assert.deepEqual(published, [['ADDED a', 'ADDED b', 'DELETED a']], 'events not held are all published');
    assert.deepEqual(bookmarks, ['4']);
    // Once published, an event is not taken back.
    push(event('MODIFIED', 'b', '5'), 1_000);
    await b.drain();
    push(event('DELETED', 'b', '6'));
    await b.drain();
    assert.deepEqual(published.slice(1), [['MODIFIED b'], ['DELETED b']]);
  });

  it('a GONE event (after a relist) supersedes as DELETED does', async () => {
    const { b, push, published } = batcher();
    push(event('MODIFIED', 'a', '1'), 1_000);
    push(event('GONE', 'a', '2'));
    await b.drain();
    assert.deepEqual(published, [['GONE a']]);
  });

  it('a held event waits for the DELETED of its uid, and the events behind it wait with it', async () => {
    const { clock, push, published, resources, bookmarks } = batcher();
    push(event('ADDED', 'x', '1'));
    push(event('MODIFIED', 'a', '2'), 1_000);
    push(event('ADDED', 'b', '3'));
    await clock.advance(FLUSH_MS);
    assert.deepEqual(published, [['ADDED x']], 'what came before the held event goes out');
    assert.deepEqual(bookmarks, ['1']);
    await clock.advance(300);
    assert.deepEqual(published, [['ADDED x']]);
    push(event('DELETED', 'a', '4'));
    await clock.advance(FLUSH_MS);
    assert.deepEqual(published, [['ADDED x'], ['ADDED b', 'DELETED a']]);
    assert.deepEqual(resources[1], [undefined, undefined], 'the superseded event’s hints went with it');
    assert.deepEqual(bookmarks, ['1', '4']);
  });

  it('a held event nothing supersedes is published when its hold ends', async () => {
    const { clock, push, published, resources } = batcher();
    push(event('MODIFIED', 'a', '1'), 1_000);
    push(event('ADDED', 'b', '2'));
    await clock.advance(999);
    assert.deepEqual(published, []);
    await clock.advance(1);
    assert.deepEqual(published, [['MODIFIED a', 'ADDED b']]);
    assert.deepEqual(resources[0], [['hint'], undefined]);
  });

  it('a held event does not make ten waiting events go out early, nor stall them past its hold', async () => {
    const { clock, push, published } = batcher();
    push(event('MODIFIED', 'held', '1'), 1_000);
    for (let i = 0; i < 12; i++) push(event('ADDED', `p${i}`, String(2 + i)));
    await clock.advance(500);
    assert.deepEqual(published, []);
    await clock.advance(500);
    assert.equal(published.flat().length, 13);
    assert.equal(published.flat()[0], 'MODIFIED held');
  });

  it('drain publishes held events at once', async () => {
    const { b, push, published, bookmarks } = batcher();
    push(event('MODIFIED', 'a', '1'), 1_000);
    push(event('ADDED', 'b', '2'));
    await b.drain();
    assert.deepEqual(published, [['MODIFIED a', 'ADDED b']]);
    assert.deepEqual(bookmarks, ['2']);
  });
});
