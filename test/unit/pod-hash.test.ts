import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { podSpecHash, podStatusHash, stableJson } from '../../lib/pod/pod-hash.ts';

function pod(overrides: { labels?: Record<string, string>; image?: string } = {}): V1Pod {
  return {
    metadata: {
      namespace: 'ns',
      name: 'p',
      uid: 'u1',
      resourceVersion: '10',
      labels: overrides.labels ?? { app: 'a' },
      managedFields: [
        { manager: 'kube-scheduler', operation: 'Update', time: new Date('2024-01-01T00:00:00Z') },
      ],
      creationTimestamp: new Date('2024-01-01T00:00:00Z'),
    },
    spec: { nodeName: 'vk', containers: [{ name: 'c', image: overrides.image ?? 'nginx:1' }] },
    status: { phase: 'Pending' },
  };
}

describe('pod hashes', () => {
  it('stableJson ignores key order and undefined members', () => {
    assert.equal(
      stableJson({ b: 1, a: { d: undefined, c: [1, { y: 2, x: 1 }] } }),
      '{"a":{"c":[1,{"x":1,"y":2}]},"b":1}',
    );
    assert.equal(stableJson({ t: new Date('2024-01-01T00:00:00Z') }), '{"t":"2024-01-01T00:00:00.000Z"}');
  });

  it('ignores status, resourceVersion and managedFields', () => {
    const base = podSpecHash(pod());
    const p = pod();
    p.status = { phase: 'Running', podIP: '10.0.0.1' };
    if (p.metadata) {
      p.metadata.resourceVersion = '11';
      p.metadata.managedFields = [];
    }
    assert.equal(podSpecHash(p), base);
  });

  it('changes with the spec and with labels', () => {
    const base = podSpecHash(pod());
    assert.notEqual(podSpecHash(pod({ image: 'nginx:2' })), base);
    assert.notEqual(podSpecHash(pod({ labels: { app: 'b' } })), base);
  });

  it('changes when the pod starts terminating (metadata)', () => {
    const p = pod();
    if (p.metadata) p.metadata.deletionTimestamp = new Date('2024-01-01T00:01:00Z');
    assert.notEqual(podSpecHash(p), podSpecHash(pod()));
  });

  it('status hash follows the status only', () => {
    assert.equal(
      podStatusHash({ phase: 'Running', podIP: 'x' }),
      podStatusHash({ podIP: 'x', phase: 'Running' }),
    );
    assert.notEqual(podStatusHash({ phase: 'Running' }), podStatusHash({ phase: 'Pending' }));
    assert.equal(podStatusHash(undefined), podStatusHash({}));
  });
});
