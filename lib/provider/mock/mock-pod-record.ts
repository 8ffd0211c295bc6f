import type { ItemKey, StoredItem } from '../../state/dynamodb.ts';
import type { MockPodPlan } from './mock-pod-plan.ts';
import type { MockContainer, MockPodState } from './mock-pod-status.ts';

/** How the mock stores one pod in the state table (the layout is documented on MockPodProvider). */

/** Partition of the pods of one namespace. */
export function mockPodKey(namespace: string, name: string): ItemKey {
  return { pk: `mock#pods#${namespace}`, sk: name };
}

/** gsi1 partition of the pods of one node. */
export function mockNodeIndexPartition(node: string): string {
  return `mock#node#${node}`;
}

/** One pod as the mock stores it: its state plus what tests inspect. */
export interface MockPodRecord extends MockPodState {
  /** Epoch ms when the pod was deleted; the record is then a tombstone. */
  deletedAt?: number;
  /** How many times this uid was started: 1 unless it was deleted and created again. */
  creates: number;
  /** How many updatePod calls changed this uid. */
  updates: number;
  /** How many deletePod calls deleted this uid (at most one per create). */
  deletes: number;
  version: number;
}

export function mockPodItem(record: MockPodRecord): StoredItem {
  return {
    ...mockPodKey(record.namespace, record.name),
    ...(record.deletedAt === undefined
      ? {
          gsi1pk: mockNodeIndexPartition(record.node),
          gsi1sk: `${record.namespace}/${record.name}`,
        }
      : {}),
    ...record,
    containers: record.containers.map((c) => ({ name: c.name, image: c.image })),
    plan: { ...record.plan },
  };
}

export function mockPodFromItem(item: StoredItem): MockPodRecord {
  const { namespace, name, uid, node, restartPolicy, containers, plan, createdAt, deletedAt } = item;
  const { creates, updates, deletes, version } = item;
  if (
    typeof namespace !== 'string' ||
    typeof name !== 'string' ||
    typeof uid !== 'string' ||
    typeof node !== 'string' ||
    typeof restartPolicy !== 'string' ||
    !Array.isArray(containers) ||
    !containers.every(isContainer) ||
    !isPlan(plan) ||
    typeof createdAt !== 'number' ||
    typeof creates !== 'number' ||
    typeof updates !== 'number' ||
    typeof deletes !== 'number' ||
    typeof version !== 'number'
  ) {
    throw new Error(`mock pod record ${item.pk} / ${item.sk} is malformed`);
  }
  return {
    namespace,
    name,
    uid,
    node,
    restartPolicy,
    containers,
    plan,
    createdAt,
    ...(typeof deletedAt === 'number' ? { deletedAt } : {}),
    creates,
    updates,
    deletes,
    version,
  };
}

function isContainer(value: unknown): value is MockContainer {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return typeof c.name === 'string' && typeof c.image === 'string';
}

function isPlan(value: unknown): value is MockPodPlan {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  return (
    typeof p.startDelaySeconds === 'number' &&
    (p.finishAfterSeconds === undefined || typeof p.finishAfterSeconds === 'number') &&
    typeof p.exitCode === 'number'
  );
}
