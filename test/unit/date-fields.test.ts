/**
 * Answers of our Kubernetes client carry Dates exactly where client-node's
 * ObjectSerializer put them (lib/kube/date-fields.ts): the paths are checked
 * against client-node's own type map, and a whole pod, node and lease are
 * revived as client-node deserializes them; a label or annotation named like
 * a date field stays a string, MicroTime fields stay the wire string.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { DATE_PATHS, type DatedKind, reviveDates, reviveList } from '../../lib/kube/date-fields.ts';
import { MicroTime } from '../../lib/kube/micro-time.ts';

/** client-node's model class of each kind. */
const MODELS: Record<DatedKind, string> = {
  Pod: 'V1Pod',
  Node: 'V1Node',
  Lease: 'V1Lease',
  Namespace: 'V1Namespace',
  Secret: 'V1Secret',
  ConfigMap: 'V1ConfigMap',
  Service: 'V1Service',
  Event: 'CoreV1Event',
  TokenReview: 'V1TokenReview',
  SubjectAccessReview: 'V1SubjectAccessReview',
  Status: 'V1Status',
};

interface Attribute {
  name: string;
  baseName: string;
  type: string;
}

function attributes(model: string): Attribute[] | undefined {
  const cls = (k8s as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] }>)[model];
  return cls?.getAttributeTypeMap?.();
}

/** Every path of an attribute of type Date reachable from `model`, in DATE_PATHS' notation. */
function datePathsOf(model: string, prefix = '', seen: string[] = []): string[] {
  const found: string[] = [];
  for (const a of attributes(model) ?? []) {
    let type = a.type.replace(/ \| (null|undefined)$/g, '');
    let path = `${prefix}${a.baseName}`;
    for (;;) {
      if (type.startsWith('Array<')) {
        type = type.slice(6, -1);
        path += '[]';
      } else if (type.startsWith('{ [key: string]: ')) {
        type = type.slice(17, -3);
        path += '{}';
      } else break;
    }
    if (type === 'Date') found.push(path);
    else if (attributes(type) && !seen.includes(type))
      found.push(...datePathsOf(type, `${path}.`, [...seen, model]));
  }
  return found;
}

describe('date-time fields of the kinds the functions read', () => {
  for (const [kind, model] of Object.entries(MODELS) as Array<[DatedKind, string]>) {
    it(`${kind}: the paths are client-node's ${model} Date attributes`, () => {
      assert.deepEqual([...DATE_PATHS[kind]].sort(), datePathsOf(model).sort());
    });
  }

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

  it('a pod is revived as client-node deserializes it (Dates at their paths, nothing else)', () => {
    const ours = reviveDates('Pod', pod());
    const theirs = structuredClone(ObjectSerializer.deserialize(pod(), 'V1Pod', ''));
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

  it('a node and a lease as client-node reads them; a lease renewTime (MicroTime) stays the wire string', () => {
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
    assert.deepEqual(
      reviveDates('Node', node()),
      structuredClone(ObjectSerializer.deserialize(node(), 'V1Node', '')),
    );
    const lease = () => ({
      metadata: { name: 'vk', namespace: 'kube-node-lease', creationTimestamp: '2026-11-27T01:02:03Z' },
      spec: { holderIdentity: 'vk', leaseDurationSeconds: 40, renewTime: '2026-11-27T01:02:03.123456Z' },
    });
    const ours = reviveDates('Lease', lease());
    assert.deepEqual(ours, structuredClone(ObjectSerializer.deserialize(lease(), 'V1Lease', '')));
    assert.equal(ours.spec.renewTime, '2026-11-27T01:02:03.123456Z');
  });

  it('a list: every item revived, metadata.continue as _continue (client-node V1ListMeta)', () => {
    const list = () => ({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '42', continue: 'next-page' },
      items: [pod(), pod()],
    });
    const ours = reviveList('Pod', list());
    assert.deepEqual(ours, structuredClone(ObjectSerializer.deserialize(list(), 'V1PodList', '')));
    assert.equal((ours.metadata as { _continue?: string })._continue, 'next-page');
    assert.ok(ours.items.every((p) => (p.metadata.creationTimestamp as unknown) instanceof Date));
  });

  it('a MicroTime is written with microseconds, as client-node V1MicroTime', () => {
    const at = Date.UTC(2026, 10, 27, 1, 2, 3, 456);
    assert.equal(JSON.stringify({ t: new MicroTime(at) }), '{"t":"2026-11-27T01:02:03.456000Z"}');
    assert.equal(JSON.stringify(new MicroTime(at)), JSON.stringify(new k8s.V1MicroTime(at)));
  });
});
