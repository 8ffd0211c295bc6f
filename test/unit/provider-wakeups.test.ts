import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../lib/log/logger.ts';
import {
  MIN_WAKE_INTERVAL_MS,
  ProviderWakeups,
  REOPEN_MS,
  WAKE_SETTLE_MS,
} from '../../lib/pod/status/provider-wakeups.ts';
import type { ProviderChange } from '../../lib/provider/provider.ts';
import { FakeClock } from '../support/fake-clock.ts';

/**
 * pod-status's wake-ups: a provider change cuts the wait between rounds
 * short, a burst is one wake-up, and a stream that fails leaves the waits
 * as they were (polling), logged once.
 */

/** A provider's change stream the test pushes into; it ends when the caller's signal aborts. */
class ChangeFeed {
  readonly opened: string[] = [];
  #push: ((change: ProviderChange) => void) | undefined;

  watchChanges = (node: string, signal: AbortSignal): AsyncIterable<ProviderChange> => {
    this.opened.push(node);
    const queue: ProviderChange[] = [];
    let notify: (() => void) | undefined;
    this.#push = (change) => {
      queue.push(change);
      notify?.();
    };
    signal.addEventListener('abort', () => notify?.(), { once: true });
    return {
      async *[Symbol.asyncIterator]() {
        while (!signal.aborted) {
          const next = queue.shift();
          if (next) {
            yield next;
            continue;
          }
          await new Promise<void>((resolve) => {
            notify = resolve;
          });
        }
      },
    };
  };

  change(reason = 'die'): void {
    this.#push?.({ reason });
  }
}

function logSink(): { lines: Array<{ level: string; msg: string }>; write(line: string): void } {
  const lines: Array<{ level: string; msg: string }> = [];
  return { lines, write: (line) => lines.push(JSON.parse(line)) };
}

/** Lets the stream loops and the waits run what they can without moving the clock. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('provider wake-ups', () => {
  it('waits the whole time when no change comes', async () => {
    const clock = new FakeClock();
    const feed = new ChangeFeed();
    const wakeups = new ProviderWakeups({
      provider: feed,
      nodes: ['n1'],
      clock,
      log: createLogger({ level: 'silent' }),
    });
    const stop = new AbortController();
    wakeups.open(stop.signal);
    let result: boolean | undefined;
    void wakeups.wait(60_000, stop.signal).then((woken) => {
      result = woken;
    });
    await clock.advance(59_999);
    assert.equal(result, undefined);
    await clock.advance(1);
    assert.equal(result, false);
    assert.equal(wakeups.woken, 0);
    stop.abort();
  });

  it('wakes a wait at once on a change, and a burst of changes is one wake-up', async () => {
    const clock = new FakeClock();
    const feed = new ChangeFeed();
    const wakeups = new ProviderWakeups({
      provider: feed,
      nodes: ['n1'],
      clock,
      log: createLogger({ level: 'silent' }),
    });
    const stop = new AbortController();
    wakeups.open(stop.signal);
    await settle();
    assert.deepEqual(feed.opened, ['n1']);
    let result: boolean | undefined;
    void wakeups.wait(60_000, stop.signal).then((woken) => {
      result = woken;
    });
    await clock.advance(1_000);
    feed.change('die');
    await settle();
    // The rest of the burst comes within the settle time.
    feed.change('remove');
    feed.change('start');
    await settle();
    await clock.advance(WAKE_SETTLE_MS);
    assert.equal(result, true, 'woken after the settle time, 59 s before the interval ended');
    assert.equal(clock.monotonic(), 1_000 + WAKE_SETTLE_MS);
    assert.equal(wakeups.woken, 1);

    // The burst was taken by that wake-up: the next wait runs its whole time.
    result = undefined;
    void wakeups.wait(60_000, stop.signal).then((woken) => {
      result = woken;
    });
    await clock.advance(59_999);
    assert.equal(result, undefined);
    await clock.advance(1);
    assert.equal(result, false);
    assert.equal(wakeups.woken, 1);
    stop.abort();
  });

  it('a change while no wait runs (during a round) ends the next wait after the settle time', async () => {
    const clock = new FakeClock();
    const feed = new ChangeFeed();
    const wakeups = new ProviderWakeups({
      provider: feed,
      nodes: ['n1', 'n2'],
      clock,
      log: createLogger({ level: 'silent' }),
    });
    const stop = new AbortController();
    wakeups.open(stop.signal);
    await settle();
    assert.deepEqual(feed.opened, ['n1', 'n2']);
    feed.change();
    await settle();
    let result: boolean | undefined;
    void wakeups.wait(60_000, stop.signal).then((woken) => {
      result = woken;
    });
    await clock.advance(WAKE_SETTLE_MS);
    assert.equal(result, true);
    assert.equal(wakeups.woken, 1);
    stop.abort();
  });

  it('woken rounds start at most once per minimum wake interval while changes keep coming', async () => {
    const clock = new FakeClock();
    const feed = new ChangeFeed();
    const wakeups = new ProviderWakeups({
      provider: feed,
      nodes: ['n1'],
      clock,
      log: createLogger({ level: 'silent' }),
    });
    const stop = new AbortController();
    wakeups.open(stop.signal);
    await settle();
    const wokenAt: number[] = [];
    const loop = (async () => {
      while (wokenAt.length < 3) {
        if (await wakeups.wait(60_000, stop.signal)) wokenAt.push(clock.monotonic());
      }
    })();
    // A change every 100 ms, as a busy node's containers (and the rounds' own starts) send them.
    for (let t = 0; t < 40; t++) {
      feed.change('start');
      await settle();
      await clock.advance(100);
    }
    await loop;
    assert.deepEqual(wokenAt, [
      WAKE_SETTLE_MS,
      WAKE_SETTLE_MS + MIN_WAKE_INTERVAL_MS,
      WAKE_SETTLE_MS + 2 * MIN_WAKE_INTERVAL_MS,
    ]);
    stop.abort();
  });

  it('rejects a wait when its signal aborts, as the clock does', async () => {
    const clock = new FakeClock();
    const wakeups = new ProviderWakeups({
      provider: new ChangeFeed(),
      nodes: ['n1'],
      clock,
      log: createLogger({ level: 'silent' }),
    });
    const stop = new AbortController();
    wakeups.open(stop.signal);
    const waiting = wakeups.wait(60_000, stop.signal);
    stop.abort(new Error('stopped'));
    await assert.rejects(waiting, /stopped/);
  });

  it('polls on when the stream fails: the wait runs its whole time, one warning, reopened with a back-off', async () => {
    const clock = new FakeClock();
    const sink = logSink();
    let opened = 0;
    const wakeups = new ProviderWakeups({
      provider: {
        watchChanges: () => {
          opened++;
          throw new Error('connect ECONNREFUSED');
        },
      },
      nodes: ['n1'],
      clock,
      log: createLogger({ level: 'debug' }, sink),
    });
    const stop = new AbortController();
    wakeups.open(stop.signal);
    let result: boolean | undefined;
    void wakeups.wait(10_000, stop.signal).then((woken) => {
      result = woken;
    });
    for (let t = 0; t < 10; t++) await clock.advance(1_000);
    assert.equal(result, false, 'a failed stream wakes nothing early, nor late');
    // Reopened after 1 s, 2 s, 4 s: at 0, 1, 3 and 7 s.
    assert.equal(opened, 4);
    assert.deepEqual(clock.sleeps.filter((ms) => ms !== 10_000).slice(0, 3), [
      REOPEN_MS,
      2 * REOPEN_MS,
      4 * REOPEN_MS,
    ]);
    const failures = sink.lines.filter((l) => /change stream failed/.test(l.msg));
    assert.equal(failures.length, 4);
    assert.deepEqual(
      failures.map((l) => l.level),
      ['WARN', 'DEBUG', 'DEBUG', 'DEBUG'],
    );
    stop.abort();
  });

  it('is unavailable, and opens nothing, for a provider without watchChanges', () => {
    const wakeups = new ProviderWakeups({
      provider: {},
      nodes: ['n1'],
      clock: new FakeClock(),
      log: createLogger({ level: 'silent' }),
    });
    assert.equal(wakeups.available, false);
    wakeups.open(new AbortController().signal);
  });
});
