import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { CLOCK_SKEW_ALLOWANCE_MS } from '../../lib/pod/known/known-pod-claim.ts';
import type { KnownPod } from '../../lib/pod/known/known-pods.ts';
import { podSpecHash } from '../../lib/pod/pod-hash.ts';
import { TERMINATED_MARK } from '../../lib/pod/status/pod-status-builders.ts';
import {
  type DecideContext,
  decideFromRecords,
  decideGone,
  decideSync,
  type SyncState,
} from '../../lib/pod/sync/pod-sync-decision.ts';

const NOW = Date.parse('2024-05-01T12:00:00Z');
const ctx: DecideContext = { nodes: ['vk-a', 'vk-b'], now: NOW };

function pod(
  options: {
    uid?: string;
    node?: string;
    phase?: string;
    deleting?: string;
    running?: boolean;
    image?: string;
  } = {},
): V1Pod {
  return {
    metadata: {
      namespace: 'ns',
      name: 'p',
      uid: options.uid ?? 'u1',
      ...(options.deleting ? { deletionTimestamp: new Date(options.deleting) } : {}),
    },
    spec: {
      ...(options.node === '' ? {} : { nodeName: options.node ?? 'vk-a' }),
      containers: [{ name: 'c', image: options.image ?? 'nginx:1' }],
    },
    status: {
      phase: options.phase ?? (options.running ? 'Running' : 'Pending'),
      ...(options.running
        ? {
            containerStatuses: [
              {
                name: 'c',
                image: 'nginx',
                imageID: '',
                ready: true,
                restartCount: 0,
                state: { running: {} },
              },
            ],
          }
        : {}),
    },
  };
}

function record(overrides: Partial<KnownPod> = {}): KnownPod {
  return { node: 'vk-a', namespace: 'ns', name: 'p', uid: 'u1', version: 3, ...overrides };
}

const claim = (untilMs: number, token = 'other') => ({
  token,
  owner: 'req-other',
  hash: 'h',
  until: new Date(untilMs).toISOString(),
});

function decide(p: V1Pod | undefined, records: KnownPod[], context: DecideContext = ctx) {
  const state: SyncState = { namespace: 'ns', name: 'p', records, ...(p ? { pod: p } : {}) };
  return decideSync(state, context);
}

describe('pod-sync decisions (in the order decideSync checks them)', () => {
  it('pod gone: forget the record (after a provider delete), or look for an orphan when there is none', () => {
    assert.equal(decide(undefined, [record()]).kind, 'forget-stale');
    assert.equal(decide(undefined, []).kind, 'delete-orphan');
  });

  it('a new pod under the same name: the old uid is handled first', () => {
    const step = decide(pod({ uid: 'u2' }), [record({ uid: 'u1' })]);
    assert.equal(step.kind, 'forget-stale');
    assert.equal(step.kind === 'forget-stale' && step.record.uid, 'u1');
    // Also when the old pod's record is on another of our nodes.
    assert.equal(
      decide(pod({ uid: 'u2', node: 'vk-b' }), [record({ uid: 'u1', node: 'vk-a' })]).kind,
      'forget-stale',
    );
  });

  it('waits for a live claim of another invocation before touching anything', () => {
    const live = claim(NOW + 10_000);
    assert.equal(decide(pod(), [record({ claim: live })]).kind, 'wait');
    assert.equal(decide(undefined, [record({ claim: live })]).kind, 'wait');
    assert.equal(
      decide(pod({ deleting: '2024-05-01T12:00:30Z', running: true }), [record({ claim: live })]).kind,
      'wait',
    );
    const applied = record({ appliedHash: podSpecHash(pod()), claim: live });
    assert.equal(decide(pod(), [applied]).kind, 'wait');
  });

  it('takes over an expired claim (past its until by the clock skew allowance), one it watched outlive a whole claim, and never waits for its own', () => {
    // Within the allowance the claimant's clock may run behind this reader's: still live.
    assert.equal(decide(pod(), [record({ claim: claim(NOW - 1) })]).kind, 'wait');
    assert.equal(decide(pod(), [record({ claim: claim(NOW - CLOCK_SKEW_ALLOWANCE_MS + 1) })]).kind, 'wait');
    const step = decide(pod(), [record({ claim: claim(NOW - CLOCK_SKEW_ALLOWANCE_MS) })]);
    assert.equal(step.kind, 'apply');
    assert.equal(step.kind === 'apply' && step.mode, 'create');
    const outlived = decide(pod(), [record({ claim: claim(NOW + 10_000) })], {
      ...ctx,
      outlived: new Set(['other']),
    });
    assert.equal(outlived.kind, 'apply');
    const own = decide(pod(), [record({ claim: claim(NOW + 10_000, 'mine') })], {
      ...ctx,
      ownTokens: new Set(['mine']),
    });
    assert.equal(own.kind, 'apply');
  });

  it('pods not bound to one of our nodes are not touched', () => {
    assert.equal(decide(pod({ node: 'someone-else' }), []).kind, 'ignore');
    assert.equal(decide(pod({ node: '' }), []).kind, 'ignore');
  });

  it('terminating and not running: force delete at once', () => {
    assert.equal(decide(pod({ deleting: '2024-05-01T12:00:30Z' }), []).kind, 'force-delete');
    const step = decide(pod({ deleting: '2024-05-01T12:00:30Z', phase: 'Succeeded' }), [record()]);
    assert.equal(step.kind, 'force-delete');
    assert.equal(step.kind === 'force-delete' && step.record?.uid, 'u1');
  });

  it('terminating and running: delete in the provider, force delete when the grace period ends', () => {
    const deleting = pod({ deleting: '2024-05-01T12:00:30Z', running: true });
    const step = decide(deleting, [record({ appliedHash: 'x' })]);
    assert.equal(step.kind, 'provider-delete');
    assert.equal(step.kind === 'provider-delete' && step.forceDeleteAt, '2024-05-01T12:00:30.000Z');
    // Once recorded, repeated events do nothing more.
    assert.deepEqual(decide(deleting, [record({ forceDeleteAt: '2024-05-01T12:00:30.000Z' })]), {
      kind: 'skip',
      reason: 'deleting',
    });
    // A shorter grace period given later is a new deletionTimestamp: act again.
    const sooner = pod({ deleting: '2024-05-01T12:00:05Z', running: true });
    assert.equal(
      decide(sooner, [record({ forceDeleteAt: '2024-05-01T12:00:30.000Z' })]).kind,
      'provider-delete',
    );
  });

  it('Succeeded or Failed: skip', () => {
    assert.deepEqual(decide(pod({ phase: 'Failed' }), [record()]), { kind: 'skip', reason: 'terminal' });
    assert.deepEqual(decide(pod({ phase: 'Succeeded' }), []), { kind: 'skip', reason: 'terminal' });
  });

  it('unchanged spec/metadata: skip, whatever the status says', () => {
    const applied = record({ appliedHash: podSpecHash(pod()) });
    assert.deepEqual(decide(pod({ running: true }), [applied]), { kind: 'skip', reason: 'unchanged' });
  });

  it('create an unknown pod (or one whose create never completed), update a known one', () => {
    const create = decide(pod(), []);
    assert.equal(create.kind === 'apply' && create.mode, 'create');
    assert.equal(create.kind === 'apply' && create.hash, podSpecHash(pod()));
    const retried = decide(pod(), [record()]);
    assert.equal(retried.kind === 'apply' && retried.mode, 'create');
    const update = decide(pod({ image: 'nginx:2' }), [record({ appliedHash: podSpecHash(pod()) })]);
    assert.equal(update.kind === 'apply' && update.mode, 'update');
  });
});

describe('pod-sync decisions that need no pod read', () => {
  const terminated = (overrides: Partial<KnownPod> = {}) =>
    record({ forceDeleteAt: '2024-05-01T12:00:30.000Z', statusHash: TERMINATED_MARK, ...overrides });

  it('a record whose terminated status was written after the provider delete: force delete by uid', () => {
    const step = decideFromRecords([terminated()], ctx);
    assert.equal(step?.kind, 'force-delete-known');
    assert.equal(step?.kind === 'force-delete-known' && step.pod.uid, 'u1');
    assert.equal(step?.kind === 'force-delete-known' && step.record?.version, 3);
  });

  it('anything else needs the pod: no terminated status, no provider delete, or another node', () => {
    assert.equal(decideFromRecords([], ctx), undefined);
    assert.equal(decideFromRecords([record({ forceDeleteAt: '2024-05-01T12:00:30.000Z' })], ctx), undefined);
    assert.equal(decideFromRecords([record({ statusHash: TERMINATED_MARK })], ctx), undefined);
    assert.equal(decideFromRecords([terminated({ node: 'vk-c' })], ctx), undefined);
  });

  it('without an event (the cluster reconciler), a force delete handed off to the status write’s event is left to it until the hand-off ends', () => {
    const handedOff = (ms: number) => terminated({ handedOffUntil: new Date(NOW + ms).toISOString() });
    const reconciler = { ...ctx, leaveHandedOff: true };
    assert.deepEqual(decideFromRecords([handedOff(10_000)], reconciler), {
      kind: 'skip',
      reason: 'deleting',
    });
    assert.equal(decideFromRecords([handedOff(-1)], reconciler)?.kind, 'force-delete-known');
    // The event's own reconcile force-deletes it.
    assert.equal(decideFromRecords([handedOff(10_000)], ctx)?.kind, 'force-delete-known');
  });

  it('waits for another invocation’s live claim, not for its own', () => {
    const claimed = terminated({ claim: claim(NOW + 10_000) });
    assert.equal(decideFromRecords([claimed], ctx)?.kind, 'wait');
    assert.equal(
      decideFromRecords([claimed], { ...ctx, ownTokens: new Set(['other']) })?.kind,
      'force-delete-known',
    );
    assert.equal(
      decideFromRecords([terminated({ claim: claim(NOW - CLOCK_SKEW_ALLOWANCE_MS) })], ctx)?.kind,
      'force-delete-known',
    );
  });

  it('a uid gone for good: forget its record, wait while it is claimed, else only its provider pod is left', () => {
    const gone = { node: 'vk-a', namespace: 'ns', name: 'p', uid: 'u1' };
    assert.equal(decideGone(gone, [record()], ctx).kind, 'forget-stale');
    assert.equal(decideGone(gone, [record({ claim: claim(NOW + 10_000) })], ctx).kind, 'wait');
    assert.deepEqual(decideGone(gone, [], ctx), { kind: 'delete-gone', pod: gone });
    // A record of another uid is a newer pod's: left alone.
    assert.deepEqual(decideGone(gone, [record({ uid: 'u2' })], ctx), { kind: 'delete-gone', pod: gone });
  });
});
