import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1PodStatus } from '@kubernetes/client-node';
import { podStatusPatch } from '../../lib/pod/status/status-patch.ts';

const guard = { uid: 'u-1', resourceVersion: '7' };
const at = new Date('2026-12-07T01:00:00Z');

describe('podStatusPatch', () => {
  it('is guarded by the uid and the resourceVersion read', () => {
    assert.deepEqual(podStatusPatch({ phase: 'Pending' }, { phase: 'Pending' }, guard), {
      metadata: { uid: 'u-1', resourceVersion: '7' },
      status: {},
    });
  });

  it('sets what changed, nulls what is no longer wanted, and leaves out what neither names', () => {
    const from: V1PodStatus = { phase: 'Pending', message: 'waiting', startTime: at };
    const to: V1PodStatus = { phase: 'Running', startTime: at, podIP: '10.88.0.5' };
    const patch = podStatusPatch(from, to, guard);
    assert.deepEqual(patch.status, { message: null, phase: 'Running', podIP: '10.88.0.5' });
    // A field the read did not show (a newer API server's, dropped by client-node's model) is not in the patch.
    assert.equal(JSON.stringify(patch).includes('hostIPs'), false);
  });

  it('compares times as the request carries them', () => {
    const patch = podStatusPatch({ startTime: at }, { startTime: new Date(at.getTime()) }, guard);
    assert.deepEqual(patch.status, {});
  });

  it('sends a changed list whole, as RFC 7386 replaces lists (conditions, container statuses, pod IPs)', () => {
    const from: V1PodStatus = {
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady' },
      ],
      podIPs: [{ ip: '10.88.0.5' }],
    };
    const to: V1PodStatus = {
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      podIPs: [{ ip: '10.88.0.5' }],
    };
    assert.deepEqual(podStatusPatch(from, to, guard).status, { conditions: to.conditions });
    const running = {
      name: 'app',
      ready: true,
      restartCount: 0,
      image: 'busybox',
      imageID: '',
      state: { running: {} },
    };
    const containers = podStatusPatch(
      { containerStatuses: [{ ...running, ready: false }] },
      { containerStatuses: [running] },
      guard,
    );
    assert.deepEqual(containers.status, { containerStatuses: [running] });
  });

  it('without a resourceVersion read, only the uid guards it', () => {
    assert.deepEqual(podStatusPatch(undefined, { phase: 'Failed' }, { uid: 'u-2' }), {
      metadata: { uid: 'u-2' },
      status: { phase: 'Failed' },
    });
  });
});
