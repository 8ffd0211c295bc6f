import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { CLOCK_SKEW_ALLOWANCE_MS } from '../../lib/pod/known/known-pod-claim.ts';
import { podStatusHash } from '../../lib/pod/pod-hash.ts';
import {
  CONTAINER_NOT_FOUND_EXIT_CODE,
  lostStatus,
  mergeStatus,
  providerFailedStatus,
  reportedStatusToWrite,
  running,
  terminatedStatus,
} from '../../lib/pod/status/pod-status-builders.ts';
import { shouldPollStatus } from '../../lib/pod/status/pod-status-syncer.ts';
import { type MockPodState, mockPodStatus } from '../../lib/provider/mock/mock-pod-status.ts';

const started = new Date('2024-01-01T00:00:00Z');
const runningContainer = (name: string): V1ContainerStatus => ({
  name,
  image: 'i',
  imageID: 'i',
  ready: true,
  restartCount: 0,
  containerID: `mock://${name}`,
  state: { running: { startedAt: started } },
});
const waiting = (name: string): V1ContainerStatus => ({
  name,
  image: 'i',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { waiting: { reason: 'ContainerCreating' } },
});
const terminated = (name: string): V1ContainerStatus => ({
  name,
  image: 'i',
  imageID: 'i',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode: 0 } },
});

describe("running() (virtual-kubelet's node/podcontroller.go, after the kubelet's)", () => {
  it('is false without container statuses', () => {
    assert.equal(running(undefined), false);
    assert.equal(running({}), false);
    assert.equal(running({ containerStatuses: [] }), false);
  });
  it('is true when some container is neither waiting nor terminated', () => {
    assert.equal(running({ containerStatuses: [terminated('a'), runningContainer('b')] }), true);
    // A state with none of the three set counts as running, as virtual-kubelet's running() has it.
    assert.equal(running({ containerStatuses: [{ ...waiting('a'), state: {} }] }), true);
  });
  it('is false when every container waits or terminated', () => {
    assert.equal(running({ containerStatuses: [terminated('a'), waiting('b')] }), false);
  });
});

describe('status writes', () => {
  const current: V1PodStatus = {
    phase: 'Pending',
    qosClass: 'BestEffort',
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'example.com/gate', status: 'True' },
      { type: 'Ready', status: 'True' },
    ],
  };

  it('merge keeps foreign conditions and qosClass, drops kubelet conditions the provider does not report', () => {
    const merged = mergeStatus(current, {
      phase: 'Running',
      conditions: [{ type: 'ContainersReady', status: 'True' }],
    });
    assert.equal(merged.phase, 'Running');
    assert.equal(merged.qosClass, 'BestEffort');
    assert.deepEqual(
      merged.conditions?.map((c) => c.type),
      ['ContainersReady', 'PodScheduled', 'example.com/gate'],
    );
  });

  it('merge lets the provider override a condition type it reports', () => {
    const merged = mergeStatus(current, {
      phase: 'Running',
      conditions: [{ type: 'PodScheduled', status: 'False' }],
    });
    assert.deepEqual(
      merged.conditions?.filter((c) => c.type === 'PodScheduled'),
      [{ type: 'PodScheduled', status: 'False' }],
    );
  });

  it('lost: Failed/NotFound, running containers terminated with -137', () => {
    const status = lostStatus(
      { phase: 'Running', containerStatuses: [runningContainer('a'), terminated('b')] },
      5_500,
    );
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'NotFound');
    assert.equal(status.message, 'The pod status was not found and may have been deleted from the provider');
    const [a, b] = status.containerStatuses ?? [];
    assert.equal(a?.state?.terminated?.exitCode, CONTAINER_NOT_FOUND_EXIT_CODE);
    assert.equal(a?.state?.terminated?.startedAt, started);
    assert.equal(a?.state?.running, undefined);
    assert.deepEqual(a?.state?.terminated?.finishedAt, new Date(5_000));
    assert.deepEqual(b?.state, { terminated: { exitCode: 0 } });
  });

  it('terminated: Succeeded/Terminated, every container terminated, earlier terminations kept', () => {
    const status = terminatedStatus(
      { phase: 'Running', containerStatuses: [runningContainer('a'), terminated('b')] },
      1_000,
    );
    assert.equal(status.phase, 'Succeeded');
    assert.equal(status.reason, 'Terminated');
    assert.equal(running(status), false);
    assert.equal(status.containerStatuses?.[0]?.state?.terminated?.reason, 'Terminated');
    assert.deepEqual(status.containerStatuses?.[1]?.state, { terminated: { exitCode: 0 } });
  });

  it('provider failure: Failed when restartPolicy is Never, else Pending, reason ProviderFailed', () => {
    const pod = (restartPolicy: string): V1Pod => ({
      spec: { restartPolicy, containers: [] },
      status: { phase: 'Pending', qosClass: 'BestEffort' },
    });
    assert.deepEqual(providerFailedStatus(pod('Never'), 'boom'), {
      phase: 'Failed',
      qosClass: 'BestEffort',
      reason: 'ProviderFailed',
      message: 'boom',
    });
    assert.equal(providerFailedStatus(pod('Always'), 'boom').phase, 'Pending');
    assert.equal(providerFailedStatus(pod('OnFailure'), 'boom').phase, 'Pending');
  });
});

describe('status push and poll share one notion of "already written"', () => {
  const NOW = Date.parse('2026-03-01T10:00:00Z');
  const claim = (untilMs: number) => ({
    token: 't',
    owner: 'req-1',
    hash: 'spec',
    until: new Date(untilMs).toISOString(),
  });
  // What the mock pushes with its create, and reports again on every later poll.
  const state: MockPodState = {
    namespace: 'ns',
    name: 'p',
    uid: 'u1',
    node: 'vk-1',
    restartPolicy: 'Always',
    containers: [{ name: 'c', image: 'nginx' }],
    plan: { startDelaySeconds: 0, exitCode: 0 },
    createdAt: NOW,
  };

  it('a status the record says was written is not written again, whoever wrote it', () => {
    const pushed = mockPodStatus(state, NOW, '172.20.0.7');
    const change = reportedStatusToWrite({}, pushed);
    assert.ok(change, 'nothing recorded yet: write');
    assert.equal(change.hash, podStatusHash(pushed));
    const polledLater = mockPodStatus(state, NOW + 60_000, '172.20.0.7');
    assert.equal(reportedStatusToWrite({ statusHash: change.hash }, polledLater), undefined);
  });

  it('a status that changed since the recorded one is written, key order aside', () => {
    const pushed = mockPodStatus(state, NOW, '172.20.0.7');
    const recorded = podStatusHash(pushed);
    const reordered = Object.fromEntries(Object.entries(pushed).reverse());
    assert.equal(reportedStatusToWrite({ statusHash: recorded }, reordered), undefined);
    const finished = mockPodStatus(
      { ...state, plan: { ...state.plan, finishAfterSeconds: 1 } },
      NOW + 5_000,
      'h',
    );
    assert.equal(reportedStatusToWrite({ statusHash: recorded }, finished)?.status.phase, 'Succeeded');
  });

  it('a provider without status at once reports nothing: nothing is pushed', () => {
    assert.equal(reportedStatusToWrite({}, undefined), undefined);
  });

  it('pod-status leaves a pod alone while a pod-sync claim on it is live, listed or not', () => {
    const live = { claim: claim(NOW + 1), appliedHash: 'spec' };
    assert.equal(shouldPollStatus(live, true, NOW), false);
    assert.equal(shouldPollStatus(live, false, NOW), false);
    // Past its until, the claimant's clock may still run behind this one's by the allowance.
    assert.equal(shouldPollStatus({ claim: claim(NOW - 1), appliedHash: 'spec' }, true, NOW), false);
    // A crashed claimant's claim expires: the poll is the fallback.
    const expired = claim(NOW - CLOCK_SKEW_ALLOWANCE_MS);
    assert.equal(shouldPollStatus({ claim: expired, appliedHash: 'spec' }, true, NOW), true);
  });

  it('pod-status leaves a pod alone while pod-sync writes the status it got with the create, until the mark expires', () => {
    const pushing = (untilMs: number) => ({
      appliedHash: 'spec',
      pushUntil: new Date(untilMs).toISOString(),
    });
    assert.equal(shouldPollStatus(pushing(NOW + 1), true, NOW), false);
    assert.equal(shouldPollStatus(pushing(NOW + 1), false, NOW), false);
    assert.equal(shouldPollStatus(pushing(NOW - 1), true, NOW), false, 'within the clock skew allowance');
    assert.equal(
      shouldPollStatus(pushing(NOW - CLOCK_SKEW_ALLOWANCE_MS), true, NOW),
      true,
      'a crashed writer: the poll writes it',
    );
  });

  it('pod-status polls listed pods, and unlisted ones only once applied or deleted in the provider', () => {
    assert.equal(shouldPollStatus({}, true, NOW), true);
    assert.equal(shouldPollStatus({}, false, NOW), false);
    assert.equal(shouldPollStatus({ appliedHash: 'spec' }, false, NOW), true);
    assert.equal(shouldPollStatus({ forceDeleteAt: '2026-03-01T10:01:00.000Z' }, false, NOW), true);
  });
});
