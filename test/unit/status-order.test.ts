/**
 * Provider statuses are written in the order they were read from the
 * provider, not the order their writes arrive: a reading older than the one
 * the pod carries is refused, also when the write first lost a
 * resourceVersion race to it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { CoreApi } from '../../lib/kube/core-api.ts';
import { KubeApiError } from '../../lib/kube/kube-errors.ts';
import { mergeStatus } from '../../lib/pod/status/pod-status-builders.ts';
import {
  OLDER_READING,
  providerStatusOver,
  writeProviderStatus,
} from '../../lib/pod/status/pod-status-writes.ts';
import {
  isOlderReading,
  READ_AT_CONDITION,
  stampReadAt,
  statusReadAt,
} from '../../lib/pod/status/status-order.ts';

const T = Date.parse('2026-11-23T08:24:48.512Z');
const pending: V1PodStatus = {
  phase: 'Pending',
  containerStatuses: [
    {
      name: 'main',
      image: 'i',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } },
    },
  ],
};
const running: V1PodStatus = {
  phase: 'Running',
  conditions: [{ type: 'Ready', status: 'True' }],
  containerStatuses: [
    {
      name: 'main',
      image: 'i',
      imageID: 'i',
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: new Date(T) } },
    },
  ],
};
const pod = (status?: V1PodStatus, resourceVersion = '1'): V1Pod => ({
  metadata: { namespace: 'ns', name: 'p', uid: 'u', resourceVersion },
  ...(status ? { status } : {}),
});

describe('status order', () => {
  it('stamps a provider status with when it was read, in a condition of its own', () => {
    const stamped = stampReadAt(running, T);
    assert.equal(statusReadAt(stamped), T);
    assert.equal(stamped.conditions?.filter((c) => c.type === READ_AT_CONDITION).length, 1);
    assert.equal(statusReadAt(stampReadAt(stamped, T + 5)), T + 5, 'a new stamp replaces the old one');
    assert.ok(
      stamped.conditions?.some((c) => c.type === 'Ready'),
      'the other conditions stay',
    );
    assert.equal(statusReadAt(running), undefined);
    assert.equal(statusReadAt(mergeStatus(stamped, pending)), T, 'a merge keeps the stamp the pod carries');
  });

  it('refuses a reading older than the one the pod carries, and writes a newer or equal one', () => {
    const current = pod(stampReadAt(running, T));
    assert.equal(isOlderReading(current.status, T - 1), true);
    assert.equal(providerStatusOver(pending, { readAtMs: T - 5_000 })(current), OLDER_READING);
    const newer = providerStatusOver(pending, { readAtMs: T + 1 })(current);
    assert.ok(newer && newer !== OLDER_READING);
    assert.equal(newer.phase, 'Pending');
    assert.equal(statusReadAt(newer), T + 1);
    const same = providerStatusOver(running, { readAtMs: T })(current);
    assert.ok(same && same !== OLDER_READING, 'the same reading written twice is no regression');
  });

  it('writes over a status without a stamp (written before stamps, or by another writer)', () => {
    const written = providerStatusOver(pending, { readAtMs: T })(pod(running));
    assert.ok(written && written !== OLDER_READING);
    assert.equal(statusReadAt(written), T);
  });

  it('never over a finished pod', () => {
    assert.equal(providerStatusOver(running, { readAtMs: T + 1 })(pod({ phase: 'Succeeded' })), undefined);
  });

  it('a write that loses a resourceVersion race to a newer reading is refused when it reads again', async () => {
    // pod-status's write of an old reading (Pending, read at T) against the pod as its round read it,
    // while pod-sync wrote what its create reported afterwards (Running, read at T + 4 s).
    let stored = pod(stampReadAt(running, T + 4_000), '2');
    const writes: V1PodStatus[] = [];
    const core = {
      readNamespacedPod: async () => stored,
      patchNamespacedPodStatus: async ({ body }: { body: V1Pod }) => {
        if (body.metadata?.resourceVersion !== stored.metadata?.resourceVersion)
          throw new KubeApiError(
            409,
            { kind: 'Status', code: 409 },
            'PATCH /api/v1/namespaces/ns/pods/p/status',
          );
        writes.push(body.status ?? {});
        stored = {
          ...stored,
          status: { ...stored.status, ...body.status },
          metadata: { ...stored.metadata, resourceVersion: '3' },
        };
        return stored;
      },
    } as unknown as CoreApi;
    const result = await writeProviderStatus(core, { namespace: 'ns', name: 'p', uid: 'u' }, pending, {
      pod: pod(undefined, '1'),
      readAtMs: T,
    });
    assert.equal(result, 'stale');
    assert.deepEqual(writes, []);
    assert.equal(stored.status?.phase, 'Running');
  });
});
