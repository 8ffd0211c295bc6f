/** The tests' shared clock: it must behave as the system clock does, only on command. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../support/fake-clock.ts';

const WALL = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('FakeClock', () => {
  it('keeps wall and monotonic time apart: both advance together, the wall clock alone can jump', async () => {
    const clock = new FakeClock({ wall: WALL, monotonic: 500 });
    assert.equal(clock.now(), WALL);
    assert.equal(clock.monotonic(), 500);
    await clock.advance(1_500);
    assert.equal(clock.now(), WALL + 1_500);
    assert.equal(clock.monotonic(), 2_000);
    clock.setWall(WALL - 60_000);
    assert.equal(clock.now(), WALL - 60_000, 'the wall clock stepped back');
    assert.equal(clock.monotonic(), 2_000, 'monotonic time did not');
  });

  it('wakes a sleeper only once time reaches it, earliest first, and its continuation has run when advance resolves', async () => {
    const clock = new FakeClock();
    const woke: string[] = [];
    void clock.sleep(300).then(() => woke.push('300'));
    void clock.sleep(100).then(() => woke.push('100'));
    void clock.sleep(200).then(() => woke.push('200'));
    assert.equal(clock.sleepers(), 3);
    await clock.advance(99);
    assert.deepEqual(woke, []);
    await clock.advance(1);
    assert.deepEqual(woke, ['100']);
    await clock.advance(1_000);
    assert.deepEqual(woke, ['100', '200', '300']);
    assert.equal(clock.sleepers(), 0);
  });

  it('does not wake a sleeper when only the wall clock jumps', async () => {
    const clock = new FakeClock({ wall: WALL });
    let woke = false;
    void clock.sleep(1_000).then(() => {
      woke = true;
    });
    clock.setWall(WALL + 3_600_000);
    await clock.advance(0);
    assert.equal(woke, false);
    assert.equal(clock.sleepers(), 1);
  });

  it('rejects a sleep with the signal reason when it aborts, and forgets the sleeper', async () => {
    const clock = new FakeClock();
    const control = new AbortController();
    const sleeping = clock.sleep(1_000, control.signal);
    const reason = new Error('stopped');
    control.abort(reason);
    await assert.rejects(sleeping, (err) => err === reason);
    assert.equal(clock.sleepers(), 0);
    await assert.rejects(clock.sleep(1, AbortSignal.abort(reason)), (err) => err === reason);
  });

  it('resolves a sleep of zero or less at once, as the system clock does', async () => {
    const clock = new FakeClock();
    await clock.sleep(0);
    await clock.sleep(-5);
    assert.equal(clock.monotonic(), 0);
  });

  it('with autoAdvance, a sleep moves time itself and resolves at once; every sleep is recorded', async () => {
    const clock = new FakeClock({ wall: WALL, autoAdvance: true });
    await clock.sleep(250);
    await clock.sleep(1_000);
    assert.equal(clock.now(), WALL + 1_250);
    assert.equal(clock.monotonic(), 1_250);
    assert.deepEqual(clock.sleeps, [250, 1_000]);
  });

  it('refuses to move backwards', () => {
    assert.throws(() => new FakeClock().advance(-1), RangeError);
  });
});
