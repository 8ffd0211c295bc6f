import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LockConflictError,
  LockLostError,
  LockManager,
  type LockRecord,
  type LockStore,
  turnEpoch,
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
    advance: async (turn) => {
      const current = records.get(turn.name);
      const epoch = turnEpoch(current, turn.owner);
      if (epoch === undefined && current) return { heldBy: current };
      const taken = { ...turn, epoch: epoch ?? 1 };
      records.set(turn.name, taken);
      return { taken };
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

describe('LockManager.advance: the turn of an owner whose turns never overlap (the tick chain)', () => {
  const ttlMs = 30_000;

  it('takes a free lock at epoch 1, and a released one at the next epoch, at once', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const chain = new LockManager({ store, owner: 'tick-chain', ttlMs, clock });
    const first = await chain.advance('free');
    assert.equal(first?.epoch, 1);
    assert.equal(store.records.get('free')?.owner, 'tick-chain');

    const other = new LockManager({ store, owner: 'watcher', ttlMs: 15_000, clock });
    const held = await other.tryAcquire('released');
    assert.ok(held);
    await other.release(held);
    const turn = await chain.advance('released');
    assert.equal(turn?.epoch, 2, 'the epoch goes on from the released record');
    assert.equal(store.records.get('released')?.owner, 'tick-chain');
  });

  it('held by the same owner with its TTL still running: advances the epoch all the same, so the earlier turn is fenced out', async () => {
    const store = memoryStore();
    const clock = manualClock();
    // Two sandboxes of one chain: the second does not wait for the first's TTL.
    const sandbox1 = new LockManager({ store, owner: 'tick-chain', ttlMs, clock });
    const sandbox2 = new LockManager({ store, owner: 'tick-chain', ttlMs, clock });
    const earlier = await sandbox1.advance('l');
    assert.ok(earlier);
    await clock.advance(1_000);
    assert.ok(sandbox1.isValid(earlier), 'the earlier turn is well within its TTL');
    const later = await sandbox2.advance('l');
    assert.equal(later?.epoch, earlier.epoch + 1);
    assert.equal(store.records.get('l')?.epoch, earlier.epoch + 1);
    assert.notEqual(store.records.get('l')?.rvn, earlier.rvn);
    // The earlier turn's handle no longer holds the lock (the condition its fenced writes check).
    await assert.rejects(sandbox1.renew(earlier), LockLostError);
    assert.equal((await sandbox1.advance('l'))?.epoch, earlier.epoch + 2, 'and every turn goes on');
  });

  it('held by another owner that keeps renewing: no turn, the record untouched', async () => {
    const store = memoryStore();
    const clock = manualClock();
    const watcher = new LockManager({ store, owner: 'watcher', ttlMs: 15_000, clock });
    const chain = new LockManager({ store, owner: 'tick-chain', ttlMs, clock });
    const held = await watcher.tryAcquire('l');
    assert.ok(held);
    for (let i = 0; i < 10; i++) {
      assert.equal(await chain.advance('l'), undefined);
      await clock.advance(10_000);
      await watcher.renew(held);
    }
    assert.equal(store.records.get('l')?.owner, 'watcher');
    assert.equal(store.records.get('l')?.epoch, held.epoch);
  });

  it("held by another owner that stopped renewing: taken over once unchanged for that owner's whole TTL, at the next epoch", async () => {
    const store = memoryStore();
    const clock = manualClock();
    const watcher = new LockManager({ store, owner: 'watcher', ttlMs: 15_000, clock });
    const chain = new LockManager({ store, owner: 'tick-chain', ttlMs, clock });
    const held = await watcher.tryAcquire('l');
    assert.ok(held);
    // The count starts when the chain first sees this version, whatever the record says of its age.
    await clock.advance(60_000);
    assert.equal(await chain.advance('l'), undefined);
    await clock.advance(14_999);
    assert.equal(await chain.advance('l'), undefined);
    await clock.advance(1);
    const taken = await chain.advance('l');
    assert.equal(taken?.epoch, held.epoch + 1);
    assert.equal(taken?.takenOverFrom, 'watcher');
    assert.equal(store.records.get('l')?.ttlMs, ttlMs, "the chain's TTL from then on");
    await assert.rejects(watcher.renew(held), LockLostError);
    // From then on the lock is the chain's: its next turn advances at once.
    assert.equal((await chain.advance('l'))?.epoch, held.epoch + 2);
  });

  it('the rule itself: free, released and own records advance; another owner, whatever its TTL, does not', () => {
    const record = (owner: string | undefined, epoch: number): LockRecord => ({
      name: 'l',
      ...(owner === undefined ? {} : { owner }),
      epoch,
      rvn: 'r',
      ttlMs: 1,
      updatedAt: '',
    });
    assert.equal(turnEpoch(undefined, 'tick-chain'), 1);
    assert.equal(turnEpoch(record(undefined, 4), 'tick-chain'), 5);
    assert.equal(turnEpoch(record('tick-chain', 4), 'tick-chain'), 5);
    assert.equal(turnEpoch(record('watcher', 4), 'tick-chain'), undefined);
  });
});
