import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideGate, ReleaseGate } from '../../lib/release/gate.ts';
import type { ReconcilerStatus } from '../../lib/release/reconciler-status.ts';
import { FakeClock } from '../support/fake-clock.ts';

const status: ReconcilerStatus = { state: 'done', version: '2.0.0', minCompatibleRelease: '1.5.0' };

describe('release gating (WaitReady)', () => {
  it('lets everyone act before a first status exists', () => {
    assert.equal(decideGate(undefined, { release: '0.1.0', requiredReconcilerRelease: '0.1.0' }).act, true);
  });

  it('refuses a release below the minimum compatible release, naming both', () => {
    const decision = decideGate(status, { release: '1.4.9', requiredReconcilerRelease: '0.1.0' });
    assert.equal(decision.act, false);
    assert.match(decision.reason, /1\.4\.9 is below the minimum compatible release 1\.5\.0/);
  });

  it('refuses when the reconciled state comes from a release below the required one', () => {
    const decision = decideGate(status, { release: '2.1.0', requiredReconcilerRelease: '2.1.0' });
    assert.equal(decision.act, false);
    assert.match(decision.reason, /comes from release 2\.0\.0, below the release 2\.1\.0/);
  });

  it('lets a compatible release act, also while the state is working', () => {
    assert.equal(decideGate(status, { release: '1.5.0', requiredReconcilerRelease: '1.0.0' }).act, true);
    assert.equal(
      decideGate({ ...status, state: 'working' }, { release: '2.0.0', requiredReconcilerRelease: '2.0.0' })
        .act,
      true,
    );
  });

  it('the reconciler itself does not wait for a reconciler release', () => {
    assert.equal(decideGate(status, { release: '2.1.0' }).act, true);
  });
});

describe('release gate: the status read is reused briefly', () => {
  const restricted: ReconcilerStatus = { state: 'working', version: '1.0.0', minCompatibleRelease: '2.0.0' };

  function gate(statusCacheMs: number, first: ReconcilerStatus | undefined = status) {
    const clock = new FakeClock({ wall: Date.parse('2026-11-21T08:00:00Z'), monotonic: 1_000 });
    const store = { current: first, reads: 0, records: [] as number[] };
    const g = new ReleaseGate({
      statuses: {
        get: async () => {
          store.reads++;
          return store.current === undefined ? undefined : { ...store.current, epoch: 1, updatedAt: '' };
        },
      },
      releases: {
        record: async (_release, _fn, now) => {
          store.records.push(now);
        },
      },
      clock,
      own: { release: '1.5.0', requiredReconcilerRelease: '1.0.0' },
      recordTtlMs: 300_000,
      statusCacheMs,
    });
    const advance = (ms: number) => clock.advance(ms);
    return { g, store, advance };
  }

  it('reads the status once per cache period, and records the release every quarter TTL whatever the cache', async () => {
    const { g, store, advance } = gate(10_000);
    assert.equal((await g.check('pod-sync')).act, true);
    await advance(9_999);
    assert.equal((await g.check('pod-sync')).act, true);
    assert.equal(store.reads, 1, 'the second check reuses the read');
    await advance(1);
    assert.equal((await g.check('pod-sync')).act, true);
    assert.equal(store.reads, 2, 'read again once the period is over');
    await advance(75_000);
    await g.check('pod-sync');
    assert.equal(store.records.length, 2, 'the release is re-recorded every quarter TTL, cache or not');
  });

  it('a restriction is seen once the cached read is older than the period', async () => {
    const { g, store, advance } = gate(10_000);
    assert.equal((await g.check('heartbeat')).act, true);
    store.current = restricted;
    await advance(5_000);
    assert.equal((await g.check('heartbeat')).act, true, 'within the period: the cached status');
    await advance(5_000);
    const decision = await g.check('heartbeat');
    assert.equal(decision.act, false);
    assert.match(decision.reason, /below the minimum compatible release 2\.0\.0/);
  });

  it('a refusal is never reused: the release acts as soon as the status allows it', async () => {
    const { g, store, advance } = gate(10_000, restricted);
    assert.equal((await g.check('pod-sync')).act, false);
    store.current = status;
    await advance(1);
    assert.equal((await g.check('pod-sync')).act, true);
    assert.equal(store.reads, 2);
  });

  it('0 reads the status on every check', async () => {
    const { g, store } = gate(0);
    await g.check('pod-sync');
    await g.check('pod-sync');
    assert.equal(store.reads, 2);
  });

  it('no status yet (everyone acts) is reused like any status that lets this release act', async () => {
    const { g, store, advance } = gate(10_000, undefined);
    assert.equal((await g.check('pod-sync')).act, true);
    await advance(1_000);
    assert.equal((await g.check('pod-sync')).act, true);
    assert.equal(store.reads, 1);
  });

  it('concurrent checks share one read in flight', async () => {
    const { g, store } = gate(10_000);
    const decisions = await Promise.all([g.check('pod-sync'), g.check('pod-sync'), g.check('pod-sync')]);
    assert.ok(decisions.every((d) => d.act));
    assert.equal(store.reads, 1);
  });

  it('a failed read is not cached: the next check reads again', async () => {
    const store = { reads: 0 };
    let fail = true;
    const failing = new ReleaseGate({
      statuses: {
        get: async () => {
          store.reads++;
          if (fail) throw new Error('throttled');
          return undefined;
        },
      },
      releases: { record: async () => {} },
      clock: new FakeClock({ wall: 0 }),
      own: { release: '1.5.0' },
      recordTtlMs: 300_000,
      statusCacheMs: 10_000,
    });
    await assert.rejects(failing.check('pod-sync'), /throttled/);
    fail = false;
    assert.equal((await failing.check('pod-sync')).act, true);
    assert.equal(store.reads, 2);
  });
});
