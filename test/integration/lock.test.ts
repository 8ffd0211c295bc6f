import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DynamoDbLockStore, lockKey } from '../../lib/lock/dynamodb-lock-store.ts';
import { LockLostError, LockManager } from '../../lib/lock/lock.ts';
import { freshTable, uniqueName, waitFor } from '../support/kube.ts';

describe('DynamoDB locks against DynamoDB Local', () => {
  it('two contenders at once: exactly one holds, at epoch 1', async () => {
    const { table } = await freshTable();
    const store = new DynamoDbLockStore(table);
    const name = uniqueName('lock');
    const contenders = ['a', 'b', 'c'].map((owner) => new LockManager({ store, owner, ttlMs: 5_000 }));
    const handles = await Promise.all(contenders.map((c) => c.tryAcquire(name)));
    const held = handles.filter((h) => h !== undefined);
    assert.equal(held.length, 1);
    assert.equal(held[0]?.epoch, 1);
    assert.equal((await table.get(lockKey(name)))?.owner, held[0]?.owner);
  });

  it('a frozen holder is taken over after one lease, and its renewal and fenced write are rejected', async () => {
    const { table } = await freshTable();
    const store = new DynamoDbLockStore(table);
    const name = uniqueName('lock');
    const frozen = new LockManager({ store, owner: 'frozen', ttlMs: 1_500 });
    const contender = new LockManager({ store, owner: 'contender', ttlMs: 1_500 });
    const old = await frozen.tryAcquire(name);
    assert.ok(old);
    await store.fencedWrite(old, [{ put: { pk: `status#${name}`, sk: 'status', writer: 'frozen' } }]);

    // The holder stops renewing (frozen); the contender polls until it may take over.
    const started = Date.now();
    const taken = await contender.acquire(name, { pollMs: 200, until: performance.now() + 10_000 });
    assert.ok(taken, 'the contender took the lock over');
    assert.ok(Date.now() - started >= 1_500, 'not before one whole lease');
    assert.equal(taken.epoch, 2);
    assert.equal(frozen.isValid(old), false, 'the frozen holder knows its lease ran out');

    // The old holder wakes up and tries to act.
    await assert.rejects(frozen.renew(old), LockLostError);
    await assert.rejects(
      store.fencedWrite(old, [{ put: { pk: `status#${name}`, sk: 'status', writer: 'stale' } }]),
      LockLostError,
    );
    assert.equal(
      (await table.get({ pk: `status#${name}`, sk: 'status' }))?.writer,
      'frozen',
      'nothing written',
    );
    await store.fencedWrite(taken, [{ put: { pk: `status#${name}`, sk: 'status', writer: 'contender' } }]);
    assert.equal((await table.get({ pk: `status#${name}`, sk: 'status' }))?.writer, 'contender');
  });

  it('the leadership check is the fence itself: it passes while held and rejects a deposed holder', async () => {
    const { table } = await freshTable();
    const store = new DynamoDbLockStore(table);
    const name = uniqueName('lock');
    const holder = new LockManager({ store, owner: 'holder', ttlMs: 5_000 });
    const handle = await holder.tryAcquire(name);
    assert.ok(handle);
    await store.assertHeld(handle);
    const current = await store.get(name);
    assert.ok(current);
    await store.replaceIfVersion(current.rvn, { ...current, owner: 'usurper', epoch: 2, rvn: 'usurped' });
    await assert.rejects(store.assertHeld(handle), LockLostError);
    await store.assertHeld({ ...handle, owner: 'usurper', epoch: 2 });
  });

  it('a live holder keeps its lock against a polling contender', async () => {
    const { table } = await freshTable();
    const store = new DynamoDbLockStore(table);
    const name = uniqueName('lock');
    const holder = new LockManager({ store, owner: 'holder', ttlMs: 1_500 });
    const contender = new LockManager({ store, owner: 'contender', ttlMs: 1_500 });
    const handle = await holder.tryAcquire(name);
    assert.ok(handle);
    const keep = setInterval(() => holder.renew(handle).catch(() => undefined), 400);
    try {
      const got = await contender.acquire(name, { pollMs: 200, until: performance.now() + 5_000 });
      assert.equal(got, undefined);
    } finally {
      clearInterval(keep);
    }
    await holder.release(handle);
    const after = await waitFor(() => contender.tryAcquire(name), {
      timeoutMs: 2_000,
      what: 'the released lock',
    });
    assert.equal(after.epoch, 2, 'release keeps the epoch growing');
  });

  it("a turn is one conditional write: free, its own and released records advance the epoch; another owner's record comes back untouched", async () => {
    const { table } = await freshTable();
    const store = new DynamoDbLockStore(table);
    const name = uniqueName('lock');
    const turn = (owner: string, rvn: string) => ({
      name,
      owner,
      rvn,
      ttlMs: 30_000,
      updatedAt: new Date().toISOString(),
    });

    const free = await store.advance(turn('tick-chain', 'r1'));
    assert.deepEqual('taken' in free && [free.taken.owner, free.taken.epoch, free.taken.rvn], [
      'tick-chain',
      1,
      'r1',
    ]);
    // The same owner again, its TTL still running: the next epoch, at once.
    const own = await store.advance(turn('tick-chain', 'r2'));
    assert.deepEqual('taken' in own && [own.taken.epoch, own.taken.rvn], [2, 'r2']);
    assert.equal((await store.get(name))?.epoch, 2);

    // Another owner (a continuous watcher) holds it: the answer carries its record, and nothing is written.
    const watcher = new LockManager({ store, owner: 'watcher', ttlMs: 15_000 });
    const current = await store.get(name);
    assert.ok(current);
    await store.replaceIfVersion(current.rvn, {
      ...current,
      owner: 'watcher',
      epoch: 3,
      rvn: 'w1',
      ttlMs: 15_000,
    });
    const held = await store.advance(turn('tick-chain', 'r3'));
    assert.ok('heldBy' in held, JSON.stringify(held));
    assert.deepEqual([held.heldBy.owner, held.heldBy.epoch, held.heldBy.rvn], ['watcher', 3, 'w1']);
    assert.equal((await store.get(name))?.rvn, 'w1', 'the record is untouched');

    // Released by the watcher: the chain takes it at the next epoch.
    await watcher.release({ name, owner: 'watcher', epoch: 3, rvn: 'w1', validUntil: 0 });
    assert.equal((await store.get(name))?.owner, undefined);
    const released = await store.advance(turn('tick-chain', 'r4'));
    assert.deepEqual('taken' in released && [released.taken.owner, released.taken.epoch], ['tick-chain', 4]);
  });
});
