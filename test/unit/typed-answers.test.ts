/**
 * Answers of our Kubernetes client are read by client-node's ObjectSerializer
 * (lib/kube/typed-calls.ts): Dates exactly where client-node's models have
 * them, a whole pod, node and lease as client-node deserializes them; a label
 * or annotation named like a date field stays a string, MicroTime fields stay
 * the wire string, a list's continue token is `_continue`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import type { KubeHttp } from '../../lib/kube/kube-http.ts';
import { MicroTime } from '../../lib/kube/micro-time.ts';
import { type Kind, TypedCalls } from '../../lib/kube/typed-calls.ts';

/** Our client's calls as lib/kube's APIs make them, over an HTTP layer that answers `answer`. */
function callsAnswering(answer: unknown): TypedCalls {
  const http: Pick<KubeHttp, 'json'> = { json: async <T>() => structuredClone(answer) as T };
  return new TypedCalls(http as KubeHttp);
}

const read = <T>(kind: Kind, answer: T): Promise<T> =>
  callsAnswering(answer).object<T>(kind, 'GET', '/x', {});

describe('answers of our Kubernetes client are what client-node returns', () => {
  const pod = () => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      namespace: 'default',
      uid: 'u-1',
      creationTimestamp: '2026-11-27T01:02:03Z',
      labels: { startTime: '2026-11-27T01:02:03Z', app: 'web' },
      annotations: { creationTimestamp: 'yesterday' },
      managedFields: [{ manager: 'kubectl', operation: 'Update', time: '2026-11-27T01:02:03Z' }],
    },
    spec: {
      nodeName: 'vk',
      containers: [
        { name: 'c', image: 'busybox', env: [{ name: 'startedAt', value: '2026-01-01T00:00:00Z' }] },
      ],
    },
    status: {
      phase: 'Running',
      startTime: '2026-11-27T01:02:04Z',
      conditions: [
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-27T01:02:05Z' },
      ],
      containerStatuses: [
        {
          name: 'c',
          ready: true,
          restartCount: 1,
          image: 'busybox',
          imageID: '',
          state: { running: { startedAt: '2026-11-27T01:02:06Z' } },
          lastState: {
            terminated: {
              exitCode: 1,
              startedAt: '2026-11-27T01:00:00Z',
              finishedAt: '2026-11-27T01:01:00Z',
            },
          },
        },
      ],
    },
  });

  it('a pod is read as client-node deserializes it (Dates at their paths, nothing else)', async () => {
    const ours = await read('Pod', pod());
    const theirs = ObjectSerializer.deserialize(pod(), 'V1Pod', '');
    assert.deepEqual(ours, theirs);
    assert.ok((ours.metadata.creationTimestamp as unknown) instanceof Date);
    assert.equal(
      (ours.metadata.creationTimestamp as unknown as Date).toISOString(),
      '2026-11-27T01:02:03.000Z',
    );
    assert.equal(ours.metadata.labels.startTime, '2026-11-27T01:02:03Z', 'a label stays a string');
    assert.equal(ours.metadata.annotations.creationTimestamp, 'yesterday', 'an annotation stays a string');
    assert.equal(ours.spec.containers[0]?.env[0]?.value, '2026-01-01T00:00:00Z');
    assert.equal(ours.status.conditions[0]?.lastProbeTime, null, 'null stays null');
  });

  it('a node and a lease as client-node reads them; a lease renewTime (MicroTime) stays the wire string', async () => {
    const node = () => ({
      metadata: { name: 'vk', creationTimestamp: '2026-11-27T01:02:03Z' },
      spec: { taints: [{ key: 'k', effect: 'NoSchedule', timeAdded: '2026-11-27T01:02:03Z' }] },
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: '2026-11-27T01:02:03Z',
            lastTransitionTime: '2026-11-27T01:00:00Z',
          },
        ],
      },
    });
    assert.deepEqual(await read('Node', node()), ObjectSerializer.deserialize(node(), 'V1Node', ''));
    const lease = () => ({
      metadata: { name: 'vk', namespace: 'kube-node-lease', creationTimestamp: '2026-11-27T01:02:03Z' },
      spec: { holderIdentity: 'vk', leaseDurationSeconds: 40, renewTime: '2026-11-27T01:02:03.123456Z' },
    });
    const ours = await read('Lease', lease());
    assert.deepEqual(ours, ObjectSerializer.deserialize(lease(), 'V1Lease', ''));
    assert.equal(ours.spec.renewTime, '2026-11-27T01:02:03.123456Z');
  });

  it('a list: every item read, metadata.continue as _continue (client-node V1ListMeta)', async () => {
    const list = () => ({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '42', continue: 'next-page' },
      items: [pod(), pod()],
    });
    const ours = await callsAnswering(list()).list<ReturnType<typeof list>>('Pod', '/x', {});
    assert.deepEqual(ours, ObjectSerializer.deserialize(list(), 'V1PodList', ''));
    assert.equal((ours.metadata as { _continue?: string })._continue, 'next-page');
    assert.ok(ours.items.every((p) => (p.metadata.creationTimestamp as unknown) instanceof Date));
  });

  it('a MicroTime is written with microseconds, as client-node V1MicroTime', () => {
    const at = Date.UTC(2026, 10, 27, 1, 2, 3, 456);
    assert.equal(JSON.stringify({ t: new MicroTime(at) }), '{"t":"2026-11-27T01:02:03.456000Z"}');
    assert.equal(JSON.stringify(new MicroTime(at)), JSON.stringify(new k8s.V1MicroTime(at)));
  });
});
