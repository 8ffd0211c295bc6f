import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LockConflictError,
  LockLostError,
  LockManager,
  type LockRecord,
  type LockStore,
} from '../../lib/lock/lock.ts';
import { FakeClock } from '../support/fake-clock.ts';

/** Sleeping advances the clock: the lock's polls run without waiting. */
function manualClock(): FakeClock {
  return new FakeClock({ wall: 1_700_000_000_000, autoAdvance: true });
}

/** The conditional-write semantics of the DynamoDB store, on a Map. */
function memoryStore(): LockStore & { records: Map<string, LockRecord> } {
  const records = new Map<string, LockRecord>();
  return {
    records,
    get: async (name) => records.get(name),
    create: async (record) => {
      if (records.has(record.name)) throw new LockConflictError('exists');
      records.set(record.name, record);
    },
    replaceIfVersion: async (rvn, next) => {
      if (records.get(next.name)?.rvn !== rvn) throw new LockConflictError('rvn changed');
      records.set(next.name, next);
    },
    replaceIfHeld: async (owner, epoch, next) => {
      const current = records.get(next.name);
      if (current?.owner !== owner || current.epoch !== epoch) throw new LockConflictError('not held');
      records.set(next.name, next);
    },
  };
}

describe('LockManager', () => {
  it('gives a free lock to exactly one of two contenders, at epoch 1', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const a = new LockManager({ store, owner: 'a', ttlMs: 15_000, clock });
    const b = new LockManager({ store, owner: 'b', ttlMs: 15_000, clock });
    const [ha, hb] = await Promise.all([a.tryAcquire('l'), b.tryAcquire('l')]);
    assert.equal([ha, hb].filter(Boolean).length, 1);
    assert.equal((ha ?? hb)?.epoch, 1);
  });

  it('does not take over a lock whose holder keeps renewing', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const holder = new LockManager({ store, owner: 'a', ttlMs: 15_000, clock });
    const contender = new LockManager({ store, owner: 'b', ttlMs: 15_000, clock });
    const handle = await holder.tryAcquire('l');
    assert.ok(handle);
    for (let i = 0; i < 10; i++) {
      assert.equal(await contender.tryAcquire('l'), undefined);
      await clock.advance(5_000);
      await holder.renew(handle);
    }
    assert.equal(store.records.get('l')?.owner, 'a');
  });

  it('takes over only after watching the record unchanged for a whole lease, raising the epoch', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const holder = new LockManager({ store, owner: 'a', ttlMs: 15_000, clock });
    const contender = new LockManager({ store, owner: 'b', ttlMs: 15_000, clock });
    const old = await holder.tryAcquire('l');
    assert.ok(old);
    // The contender starts counting when it first sees this version,
    // whatever the record's own timestamps say.
    await clock.advance(60_000);
    assert.equal(await contender.tryAcquire('l'), undefined);
    await clock.advance(14_999);
    assert.equal(await contender.tryAcquire('l'), undefined);
    await clock.advance(1);
    const taken = await contender.tryAcquire('l');
    assert.equal(taken?.epoch, 2);
    await assert.rejects(holder.renew(old), LockLostError);
  });

  it('hands over at once on release, and the epoch keeps growing', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const a = new LockManager({ store, owner: 'a', ttlMs: 15_000, clock });
    const b = new LockManager({ store, owner: 'b', ttlMs: 15_000, clock });
    const ha = await a.tryAcquire('l');
    assert.ok(ha);
    assert.equal(await b.tryAcquire('l'), undefined);
    await a.release(ha);
    assert.equal(a.isValid(ha), false);
    const hb = await b.tryAcquire('l');
    assert.equal(hb?.epoch, 2);
  });

  it('a handle is valid for one lease from the start of its last renewal', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const a = new LockManager({ store, owner: 'a', ttlMs: 15_000, clock });
    const handle = await a.tryAcquire('l');
    assert.ok(handle);
    await clock.advance(14_999);
    assert.equal(a.isValid(handle), true);
    await clock.advance(1);
    assert.equal(a.isValid(handle), false);
    await a.renew(handle);
    assert.equal(a.isValid(handle), true);
  });

  it('acquire polls until the deadline and gives up', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const a = new LockManager({ store, owner: 'a', ttlMs: 15_000, clock });
    const b = new LockManager({ store, owner: 'b', ttlMs: 15_000, clock });
    assert.ok(await a.tryAcquire('l'));
    const got = await b.acquire('l', { pollMs: 1_000, until: 5_000 });
    assert.equal(got, undefined);
    // With a longer wait, the unrenewed lock goes stale and b gets it.
    const later = await b.acquire('l', { pollMs: 1_000, until: clock.monotonic() + 20_000 });
    assert.equal(later?.owner, 'b');
  });
});
