import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import type { KnownPod } from '../../lib/pod/known/known-pods.ts';
import { podSpecHash } from '../../lib/pod/pod-hash.ts';
import { mergeStatus } from '../../lib/pod/status/pod-status-builders.ts';
import { gatedReadyCondition, readinessGatesStale } from '../../lib/pod/status/readiness-gates.ts';
import { decideSync } from '../../lib/pod/sync/pod-sync-decision.ts';
import { syncProjection } from '../../lib/pod/watch/watch-hints.ts';

const T0 = new Date('2024-05-01T12:00:00Z');
const NOW = Date.parse('2024-05-01T12:05:00Z');
const GATE = 'target-health.example.com/web';

const cond = (type: string, status: string): V1PodCondition => ({ type, status, lastTransitionTime: T0 });

function gatedPod(conditions: V1PodCondition[]): V1Pod {
  return {
    metadata: { namespace: 'ns', name: 'p', uid: 'u1' },
    spec: {
      nodeName: 'vk-a',
      containers: [{ name: 'c', image: 'nginx:1' }],
      readinessGates: [{ conditionType: GATE }],
    },
    status: { phase: 'Running', conditions },
  };
}

describe('readiness gates', () => {
  it('hold Ready while a gate condition is missing or not True, with the kubelet reason and message', () => {
    const containersReady = [cond('ContainersReady', 'True'), cond('Ready', 'True')];
    const missing = gatedReadyCondition(containersReady, [{ conditionType: GATE }], undefined, NOW);
    assert.deepEqual(missing, {
      type: 'Ready',
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
      lastTransitionTime: new Date(NOW),
    });
    const falseGate = gatedReadyCondition(
      [...containersReady, cond(GATE, 'False')],
      [{ conditionType: GATE }],
      undefined,
      NOW,
    );
    assert.equal(falseGate?.message, `the status of pod readiness gate "${GATE}" is not "True", but False`);
    const open = gatedReadyCondition(
      [...containersReady, cond(GATE, 'True')],
      [{ conditionType: GATE }],
      undefined,
      NOW,
    );
    assert.equal(open?.status, 'True');
    assert.equal(
      gatedReadyCondition([cond('ContainersReady', 'False')], [{ conditionType: GATE }], undefined, NOW),
      undefined,
      'unready containers decide Ready themselves (ContainersNotReady)',
    );
  });

  it('apply when a provider status is written: the gate condition another actor set is kept and read', () => {
    const current = gatedPod([cond(GATE, 'False')]).status;
    const reported = {
      phase: 'Running',
      conditions: [cond('ContainersReady', 'True'), cond('Ready', 'True')],
    };
    const merged = mergeStatus(current, reported, { readinessGates: [{ conditionType: GATE }], nowMs: NOW });
    assert.deepEqual(
      merged.conditions?.map((c) => [c.type, c.status]),
      [
        ['ContainersReady', 'True'],
        ['Ready', 'False'],
        [GATE, 'False'],
      ],
    );
  });

  it('have pod-sync write Ready again once a gate condition changes, which the watch announces', () => {
    const held = gatedPod([
      cond('ContainersReady', 'True'),
      {
        ...cond('Ready', 'False'),
        reason: 'ReadinessGatesNotReady',
        message: `the status of pod readiness gate "${GATE}" is not "True", but False`,
      },
      cond(GATE, 'False'),
    ]);
    assert.equal(readinessGatesStale(held), false);
    const opened = gatedPod([
      cond('ContainersReady', 'True'),
      held.status?.conditions?.[1] ?? cond('Ready', 'False'),
      cond(GATE, 'True'),
    ]);
    assert.equal(readinessGatesStale(opened), true);
    assert.notEqual(syncProjection(held), syncProjection(opened), 'the change of the gate is announced');
    const record: KnownPod = {
      node: 'vk-a',
      namespace: 'ns',
      name: 'p',
      uid: 'u1',
      version: 3,
      appliedHash: podSpecHash(opened),
    };
    const step = decideSync(
      { namespace: 'ns', name: 'p', pod: opened, records: [record] },
      { nodes: ['vk-a'], now: NOW },
    );
    assert.equal(step.kind, 'readiness');
    assert.equal(
      decideSync({ namespace: 'ns', name: 'p', pod: held, records: [record] }, { nodes: ['vk-a'], now: NOW })
        .kind,
      'skip',
    );
  });
});
