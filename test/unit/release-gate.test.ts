import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideGate } from '../../lib/release/gate.ts';
import type { ReconcilerStatus } from '../../lib/release/status.ts';

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
