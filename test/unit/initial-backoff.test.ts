/**
 * The initial reconcile's backoff on a fake clock: one schedule (100 ms
 * doubling to 10 s) per election, kept across the tick cadence's
 * invocations, each of which is cut off at its work time; a step that
 * keeps failing is tried about six times a minute once the delay has grown,
 * not again from 100 ms in every tick.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BACKOFF_MAX_MS, InitialBackoff, retryWithBackoff } from '../../lib/reconcile/initial-backoff.ts';
import { FakeClock } from '../support/fake-clock.ts';

const TICK_MS = 10_000;
const WORK_MS = 6_000;
const STEP_MS = 50;

/** One tick's share of a failing initial reconcile: retried until the work time is up. Attempts made. */
async function failingTick(clock: FakeClock, backoff: InitialBackoff): Promise<number> {
  const stop = new AbortController();
  let attempts = 0;
  const retries = retryWithBackoff({
    backoff,
    clock,
    stop: stop.signal,
    attempt: async () => {
      attempts++;
      throw new Error('apiserver not ready');
    },
    fatal: () => false,
    onFailure: () => {},
  }).catch((err: unknown) => err);
  for (let t = 0; t < WORK_MS; t += STEP_MS) await clock.advance(STEP_MS);
  stop.abort(new Error('work time up'));
  const ended = await retries;
  assert.ok(ended instanceof Error && ended.message === 'work time up', 'only the work time ends it');
  await clock.advance(TICK_MS - WORK_MS);
  return attempts;
}

describe('initial reconcile backoff', () => {
  it('goes on across ticks: about six attempts a minute once the delay reached 10 s', async () => {
    const clock = new FakeClock();
    const backoff = new InitialBackoff(clock);
    const firstMinute: number[] = [];
    for (let tick = 0; tick < 6; tick++) firstMinute.push(await failingTick(clock, backoff));
    let secondMinute = 0;
    for (let tick = 0; tick < 6; tick++) secondMinute += await failingTick(clock, backoff);
    // The first tick runs the short delays (0, 0.1, 0.3, 0.7, 1.5, 3.1 s); every later one is due once.
    assert.deepEqual(firstMinute, [6, 1, 1, 1, 1, 1]);
    assert.equal(secondMinute, 6);
    assert.equal(backoff.attempts, 17);
  });

  it('a schedule started afresh in every tick (a new election each time) would try six times a tick', async () => {
    const clock = new FakeClock();
    let attempts = 0;
    for (let tick = 0; tick < 6; tick++) attempts += await failingTick(clock, new InitialBackoff(clock));
    assert.equal(attempts, 36);
  });

  it('doubles from 100 ms up to 10 s, and says to log a failure after 2 s, then every 10 s', () => {
    const clock = new FakeClock({ autoAdvance: true });
    const backoff = new InitialBackoff(clock);
    const waits: number[] = [];
    const logged: number[] = [];
    for (let i = 0; i < 10; i++) {
      const wait = backoff.waitMs();
      waits.push(wait);
      void clock.sleep(wait);
      backoff.attempted();
      if (backoff.failed()) logged.push(clock.monotonic());
    }
    assert.deepEqual(waits, [0, 100, 200, 400, 800, 1_600, 3_200, 6_400, BACKOFF_MAX_MS, BACKOFF_MAX_MS]);
    // Failures at 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 22.7, 32.7 s.
    assert.deepEqual(logged, [3_100, 22_700, 32_700]);
  });

  it('a success ends the retries at once; a fatal error ends them with that error', async () => {
    const clock = new FakeClock({ autoAdvance: true });
    const stop = new AbortController().signal;
    let calls = 0;
    await retryWithBackoff({
      backoff: new InitialBackoff(clock),
      clock,
      stop,
      attempt: async () => {
        calls++;
        if (calls < 3) throw new Error('not yet');
      },
      fatal: () => false,
      onFailure: () => {},
    });
    assert.equal(calls, 3);
    const lost = new Error('lock lost');
    await assert.rejects(
      retryWithBackoff({
        backoff: new InitialBackoff(clock),
        clock,
        stop,
        attempt: async () => {
          throw lost;
        },
        fatal: (err) => err === lost,
        onFailure: () => assert.fail('a fatal error is not retried'),
      }),
      lost,
    );
  });
});
