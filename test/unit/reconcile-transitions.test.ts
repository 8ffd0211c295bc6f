import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideTransition, releaseCheck } from '../../lib/reconcile/transitions.ts';
import type { ReconcilerStatus } from '../../lib/release/reconciler-status.ts';
import { compareReleases, InvalidReleaseError, releaseLessThan } from '../../lib/release/release.ts';

const own = { release: '1.4.0', minCompatibleRelease: '1.2.0' };
const done: ReconcilerStatus = { state: 'done', version: '1.4.0', minCompatibleRelease: '1.2.0' };

describe('release numbers', () => {
  it('compare numerically, part by part', () => {
    assert.ok(releaseLessThan('1.9.0', '1.10.0'));
    assert.ok(releaseLessThan('0.9.9', '1.0.0'));
    assert.equal(compareReleases('2.0.1', '2.0.1'), 0);
    assert.ok(!releaseLessThan('1.0.1', '1.0.0'));
  });

  it('reject anything but major.minor.patch', () => {
    assert.throws(() => compareReleases('1.0', '1.0.0'), InvalidReleaseError);
    assert.throws(() => compareReleases('1.0.0', 'v1.0.0'), /"v1.0.0" is not a release/);
  });
});

describe("reconciler transitions (the lead() of Monogon's reconciler)", () => {
  it('no status: reconcile, then create the done status', () => {
    assert.deepEqual(decideTransition(undefined, own), { kind: 'none', done });
  });

  it('a status equal to the done status is left alone', () => {
    assert.deepEqual(decideTransition({ ...done }, own), { kind: 'leave', done });
  });

  it('a compatible status (older version, same minimum) is marked working', () => {
    const status: ReconcilerStatus = { state: 'done', version: '1.3.0', minCompatibleRelease: '1.2.0' };
    assert.deepEqual(decideTransition(status, own), {
      kind: 'mark-working',
      write: { ...status, state: 'working' },
      done,
    });
  });

  it('a compatible status already working needs no write', () => {
    const status: ReconcilerStatus = { state: 'working', version: '1.3.0', minCompatibleRelease: '1.3.0' };
    assert.deepEqual(decideTransition(status, own), { kind: 'mark-working', done });
  });

  it('a status with a lower minimum compatible release is restricted to the intersection', () => {
    const status: ReconcilerStatus = { state: 'done', version: '1.3.0', minCompatibleRelease: '1.0.0' };
    assert.deepEqual(decideTransition(status, own), {
      kind: 'restrict',
      write: { state: 'working', version: '1.3.0', minCompatibleRelease: '1.2.0' },
      done,
    });
  });

  it('a status of a newer release (a rollback) is restricted to the lower version and the higher minimum', () => {
    const status: ReconcilerStatus = { state: 'done', version: '2.0.0', minCompatibleRelease: '1.3.0' };
    assert.deepEqual(decideTransition(status, own), {
      kind: 'restrict',
      write: { state: 'working', version: '1.4.0', minCompatibleRelease: '1.3.0' },
      done,
    });
  });
});

describe('running releases seen by a leader', () => {
  it('steps down when a newer release runs', () => {
    assert.deepEqual(releaseCheck({ min: '1.4.0', max: '1.5.0' }, own), {
      verdict: 'newer',
      release: '1.5.0',
    });
  });

  it('waits while a release below its minimum compatible release runs', () => {
    assert.deepEqual(releaseCheck({ min: '1.1.9', max: '1.4.0' }, own), {
      verdict: 'incompatible',
      release: '1.1.9',
    });
  });

  it('goes on when every running release is compatible', () => {
    assert.deepEqual(releaseCheck({ min: '1.2.0', max: '1.4.0' }, own), { verdict: 'clear' });
  });
});
