import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forceDeleteDueAt, fromItem, toItem } from '../../lib/pod/known/known-pod-item.ts';
import type { KnownPod } from '../../lib/pod/known/known-pods.ts';

describe('known-pod item: when a force delete is due', () => {
  const pod: KnownPod = { node: 'vk', namespace: 'ns', name: 'p', uid: 'u', version: 3 };
  const graceEnds = '2026-11-23T08:00:30.000Z';

  it('is due at the end of the grace period, or of a later hand-off to pod-sync', () => {
    assert.equal(forceDeleteDueAt(pod), undefined);
    assert.equal(forceDeleteDueAt({ forceDeleteAt: graceEnds }), graceEnds);
    const later = '2026-11-23T08:01:30.000Z';
    assert.equal(forceDeleteDueAt({ forceDeleteAt: graceEnds, handedOffUntil: later }), later);
    const earlier = '2026-11-23T08:00:10.000Z';
    assert.equal(forceDeleteDueAt({ forceDeleteAt: graceEnds, handedOffUntil: earlier }), graceEnds);
  });

  it('sorts the index by the due time and keeps the hand-off through a round trip', () => {
    const handedOff = { ...pod, forceDeleteAt: graceEnds, handedOffUntil: '2026-11-23T08:02:00.000Z' };
    const item = toItem(handedOff);
    assert.equal(item.gsi1sk, '2026-11-23T08:02:00.000Z#vk#ns/p');
    assert.deepEqual(fromItem(item), handedOff);
    assert.equal(toItem(pod).gsi1sk, undefined);
  });
});
