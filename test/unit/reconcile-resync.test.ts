import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { KnownPod } from '../../lib/pod/known/known-pods.ts';
import { eventLikelyInFlight } from '../../lib/reconcile/reconcile-all.ts';

describe('reconciler resync grace', () => {
  const now = Date.parse('2026-11-21T10:00:00Z');
  const pod = (metadata: Record<string, unknown>) => ({ metadata }) as V1Pod;
  const record = { node: 'vk', namespace: 'ns', name: 'p', uid: 'u' } as unknown as KnownPod;

  it('leaves a new pod with no record to its event during the grace period', () => {
    const created = new Date(now - 30_000);
    assert.equal(eventLikelyInFlight(pod({ creationTimestamp: created }), undefined, now, 60_000), true);
    assert.equal(eventLikelyInFlight(pod({ creationTimestamp: created }), undefined, now, 20_000), false);
  });

  it('re-syncs a pod with a record whatever its age (a missed update or a stale record)', () => {
    assert.equal(
      eventLikelyInFlight(pod({ creationTimestamp: new Date(now - 1_000) }), record, now, 60_000),
      false,
    );
  });

  it('times a deletion from the delete call, not from its deadline', () => {
    // Deleted 10 s ago with a 30 s grace period: deletionTimestamp is 20 s ahead.
    const deleting = pod({ deletionTimestamp: new Date(now + 20_000), deletionGracePeriodSeconds: 30 });
    assert.equal(eventLikelyInFlight(deleting, record, now, 60_000), true);
    assert.equal(eventLikelyInFlight(deleting, record, now, 5_000), false);
  });

  it('leaves a pod whose terminated status pod-status handed off to pod-sync until the hand-off ends', () => {
    // Deleted long ago: only the hand-off keeps it from being force-deleted here.
    const deleting = pod({ deletionTimestamp: new Date(now - 120_000), deletionGracePeriodSeconds: 30 });
    const handedOff = (ms: number) => ({ ...record, handedOffUntil: new Date(now + ms).toISOString() });
    assert.equal(eventLikelyInFlight(deleting, handedOff(10_000), now, 60_000), true);
    assert.equal(eventLikelyInFlight(deleting, handedOff(-1), now, 60_000), false);
    assert.equal(eventLikelyInFlight(deleting, record, now, 60_000), false);
  });

  it('is off at 0', () => {
    assert.equal(eventLikelyInFlight(pod({ creationTimestamp: new Date(now) }), undefined, now, 0), false);
  });
});
