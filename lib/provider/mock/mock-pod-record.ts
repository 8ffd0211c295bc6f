import type { ItemKey, StoredItem } from '../../state/dynamodb.ts';
import type { MockRun } from './mock-command.ts';
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
  /** Epoch ms when the pod was deleted; the record is then a tombstone once `stopAt` has passed. */
  deletedAt?: number;
  /**
   * Epoch ms when a delete stops the pod's last process: the delete itself,
   * or the end of the grace period for a container that ignores SIGTERM.
   * Until then the provider still holds the pod.
   */
  stopAt?: number;
  /** Epoch ms when a delete signals the containers (SIGTERM): after the preStop hooks that run first. */
  signalAt?: number;
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
    ...(mockPodHeldAfterDelete(record)
      ? {
          gsi1pk: mockNodeIndexPartition(record.node),
          gsi1sk: `${record.namespace}/${record.name}`,
        }
      : {}),
    ...record,
    containers: record.containers.map(containerItem),
    ...(record.initContainers ? { initContainers: record.initContainers.map(containerItem) } : {}),
    plan: { ...record.plan },
  };
}

function containerItem(c: MockContainer): MockContainer {
  return {
    name: c.name,
    image: c.image,
    ...(c.run ? { run: { ...c.run } } : {}),
    ...(c.probes ? { probes: c.probes } : {}),
  };
}

/** Whether a record stays in the node's index: not deleted, or deleted but still stopping (a graceful stop). */
function mockPodHeldAfterDelete(record: MockPodRecord): boolean {
  return record.deletedAt === undefined || (record.stopAt ?? record.deletedAt) > record.deletedAt;
}

/** Whether the provider still holds this pod at `now`: not deleted, or its stop has not come yet. */
export function mockPodHeld(record: MockPodRecord, now: number): boolean {
  return record.deletedAt === undefined || now < (record.stopAt ?? record.deletedAt);
}

export function mockPodFromItem(item: StoredItem): MockPodRecord {
  const { namespace, name, uid, node, restartPolicy, containers, initContainers, plan, createdAt } = item;
  const { deletedAt, stopAt, signalAt } = item;
  const { creates, updates, deletes, version } = item;
  if (
    typeof namespace !== 'string' ||
    typeof name !== 'string' ||
    typeof uid !== 'string' ||
    typeof node !== 'string' ||
    typeof restartPolicy !== 'string' ||
    !Array.isArray(containers) ||
    !containers.every(isContainer) ||
    (initContainers !== undefined && !(Array.isArray(initContainers) && initContainers.every(isContainer))) ||
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
    ...(Array.isArray(initContainers) ? { initContainers } : {}),
    plan,
    createdAt,
    ...(typeof deletedAt === 'number' ? { deletedAt } : {}),
    ...(typeof stopAt === 'number' ? { stopAt } : {}),
    ...(typeof signalAt === 'number' ? { signalAt } : {}),
    creates,
    updates,
    deletes,
    version,
  };
}

function isContainer(value: unknown): value is MockContainer {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.name === 'string' &&
    typeof c.image === 'string' &&
    (c.run === undefined || isRun(c.run)) &&
    (c.probes === undefined || (typeof c.probes === 'object' && c.probes !== null))
  );
}

function isRun(value: unknown): value is MockRun {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    (r.seconds === undefined || typeof r.seconds === 'number') &&
    typeof r.exitCode === 'number' &&
    typeof r.ignoresTerm === 'boolean' &&
    (r.message === undefined || typeof r.message === 'string') &&
    (r.logTail === undefined || typeof r.logTail === 'string')
  );
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
