import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  initialProbeState,
  type ProbeTiming,
  probeStatus,
  recordProbe,
  shouldProbe,
} from '../../lib/provider/probe-worker.ts';

const timing = (over: Partial<ProbeTiming> = {}): ProbeTiming => ({
  initialDelaySeconds: 0,
  periodSeconds: 10,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
  ...over,
});

describe('the kubelet probe worker', () => {
  it('starts readiness at Failure, liveness at Success, startup at Unknown', () => {
    assert.equal(initialProbeState('readiness', 5).result, 'failure');
    assert.equal(initialProbeState('liveness', 5).result, 'success');
    assert.equal(initialProbeState('startup', 5).result, 'unknown');
  });

  it('moves the result only after the threshold in a row, and keeps the time of the change', () => {
    const t = timing({ successThreshold: 2, failureThreshold: 2 });
    let state = initialProbeState('readiness', 0);
    let step = recordProbe('readiness', state, t, 'success', 1_000);
    assert.equal(step.changed, false);
    assert.equal(step.state.result, 'failure');
    step = recordProbe('readiness', step.state, t, 'success', 2_000);
    assert.equal(step.changed, true);
    assert.deepEqual([step.state.result, step.state.since], ['success', 2_000]);
    state = recordProbe('readiness', step.state, t, 'failure', 3_000).state;
    state = recordProbe('readiness', state, t, 'success', 4_000).state;
    const again = recordProbe('readiness', state, t, 'failure', 5_000);
    assert.equal(again.state.result, 'success', 'a failure run broken by a success starts over');
    assert.equal(again.state.since, 2_000);
  });

  it('kills on a liveness or startup failure and holds until the next instance; readiness never kills', () => {
    const t = timing({ failureThreshold: 1 });
    const live = recordProbe('liveness', initialProbeState('liveness', 0), t, 'failure', 1_000);
    assert.deepEqual([live.kill, live.state.onHold, live.state.result], [true, true, 'failure']);
    assert.equal(
      shouldProbe('liveness', live.state, t, { running: true, startedAt: 0, started: true }, 2_000),
      false,
    );
    const start = recordProbe('startup', initialProbeState('startup', 0), t, 'failure', 1_000);
    assert.equal(start.kill, true);
    const ready = recordProbe('readiness', initialProbeState('readiness', 0), t, 'failure', 1_000);
    assert.equal(ready.kill, false);
  });

  it('probes after the initial delay only, startup until started, the others once started', () => {
    const t = timing({ initialDelaySeconds: 15 });
    const c = { running: true, startedAt: 0, started: false };
    const state = initialProbeState('liveness', 0);
    assert.equal(shouldProbe('startup', initialProbeState('startup', 0), t, c, 14_999), false);
    assert.equal(shouldProbe('startup', initialProbeState('startup', 0), t, c, 15_000), true);
    assert.equal(shouldProbe('liveness', state, t, c, 20_000), false, 'liveness waits for the startup probe');
    assert.equal(shouldProbe('liveness', state, t, { ...c, started: true }, 20_000), true);
    assert.equal(
      shouldProbe('startup', initialProbeState('startup', 0), t, { ...c, started: true }, 20_000),
      false,
    );
    assert.equal(shouldProbe('liveness', state, t, { ...c, running: false, started: true }, 20_000), false);
  });

  it('reports started and ready as UpdatePodStatus does', () => {
    assert.deepEqual(probeStatus(true, {}), { started: true, ready: true });
    assert.deepEqual(probeStatus(false, {}), { started: false, ready: false });
    assert.equal(probeStatus(true, { readiness: 'pending' }).ready, false);
    const startup = { ...initialProbeState('startup', 0), result: 'success' as const, since: 7 };
    const readiness = { ...initialProbeState('readiness', 0), result: 'success' as const, since: 9 };
    assert.deepEqual(probeStatus(true, { startup, readiness }), {
      started: true,
      ready: true,
      startedSince: 7,
      readySince: 9,
    });
    assert.equal(probeStatus(true, { startup: initialProbeState('startup', 0), readiness }).ready, false);
  });
});
