import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import { type ItemKey, isConditionFailed, type StateTable, type StoredItem } from '../../state/dynamodb.ts';
import type { Expression } from '../../state/expression.ts';
import { type AppliedPodStatus, type PodProvider, ProviderNotFoundError } from '../provider.ts';
import { type MockPodPlan, mockCreateIntent, mockPodPlan } from './mock-pod-plan.ts';
import { type MockContainer, type MockPodState, mockHostIp, mockPodObject } from './mock-pod-status.ts';

/**
 * The pod part of the mock provider. Lambda invocations share no memory, so
 * its pods live in the state table, one item per namespace/name:
 *
 * | attribute | value |
 * | --- | --- |
 * | pk, sk | `mock#pods#<namespace>`, `<name>` |
 * | gsi1pk, gsi1sk | `mock#node#<node>`, `<namespace>/<name>` (removed on delete) |
 * | namespace, name, uid, node, restartPolicy | the pod's identity and binding |
 * | containers | `[{ name, image }]` |
 * | plan | `{ startDelaySeconds, finishAfterSeconds?, exitCode }` from the annotations |
 * | createdAt | epoch ms when this uid was started: every status derives from it and the clock |
 * | deletedAt, expiresAt | set by delete: epoch ms, and epoch s for DynamoDB's TTL |
 * | creates, updates, deletes | calls that changed this uid's pod (for tests) |
 * | version | bumped by every write; each write is conditional on it |
 *
 * Keyed by namespace/name, not by node, because a new pod with the same name
 * replaces the old one wherever either runs. Spreading partitions by namespace
 * keeps a burst in one namespace on one partition (about 1,000 writes/s, far
 * above what the pipeline does); listing a node's pods goes through gsi1.
 *
 * A deleted pod leaves a tombstone (deletedAt, out of gsi1) instead of
 * vanishing, so that the counters survive a delete: a test can then see a pod
 * that was started again after its delete (`creates` 2). getPod and listPods
 * ignore tombstones; DynamoDB's TTL removes them after `tombstoneTtlSeconds`.
 */

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

export interface MockPodProviderOptions {
  table: StateTable;
  clock: Clock;
  /** The hostIP of every pod (e.g. the node's configured InternalIP); derived from the node name by default. */
  hostIp?: string;
  /** How long a deleted pod's tombstone stays (DynamoDB TTL). Default one day. */
  tombstoneTtlSeconds?: number;
}

// Enough for several writers racing on one name; each lost race costs a read.
const MAX_ATTEMPTS = 8;
const DEFAULT_TOMBSTONE_TTL_SECONDS = 24 * 60 * 60;

/**
 * Pods "run" at once unless annotations say otherwise (see mock-pod-plan.ts).
 * Deleting a pod removes it: getPod then returns undefined, which a status
 * poller reads as the terminal state of a deleted pod. Init containers are
 * not modelled and containers are never restarted.
 *
 * getPod reads strongly consistently; listPods queries gsi1, which DynamoDB
 * updates asynchronously (normally within a second): a pod created or
 * deleted a moment ago may be missing from, or still in, the list.
 *
 * It reports status at once (AppliedPodStatus): createPod and updatePod
 * resolve with the status computed from the record they wrote or found,
 * which is what getPod and listPods compute from the same record.
 */
export class MockPodProvider implements PodProvider {
  private readonly table: StateTable;
  private readonly clock: Clock;

  constructor(private readonly options: MockPodProviderOptions) {
    this.table = options.table;
    this.clock = options.clock;
  }

  /**
   * Starts the pod, or does nothing when this uid already runs.
   * @throws Error with the annotation's message when the pod asks to fail, or
   *   naming an invalid annotation or missing field; nothing is stored then.
   */
  async createPod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const state = podState(pod);
    const intent = mockCreateIntent(pod.metadata?.annotations);
    if ('fail' in intent) throw new Error(intent.fail);
    const key = mockPodKey(state.namespace, state.name);
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const current = await this.read(key);
      if (current && current.uid === state.uid && current.deletedAt === undefined)
        return this.status(current);
      const again = current?.uid === state.uid ? current : undefined;
      const record: MockPodRecord = {
        ...state,
        plan: intent.plan,
        createdAt: this.clock.now(),
        creates: (again?.creates ?? 0) + 1,
        updates: again?.updates ?? 0,
        deletes: again?.deletes ?? 0,
        version: (current?.version ?? 0) + 1,
      };
      try {
        await this.table.put(toItem(record), {
          condition: current ? versionIs(current.version) : { expression: 'attribute_not_exists(pk)' },
        });
        return this.status(record);
      } catch (err) {
        // Someone else wrote this name since we read it: decide again from what they wrote.
        if (!isConditionFailed(err)) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          throw new Error(`mock createPod ${describe(state)}: lost ${attempt} races for the record`, {
            cause: err,
          });
        }
      }
    }
  }

  /**
   * Takes the pod's new container images, restartPolicy and annotations (the
   * plan stays relative to the original start).
   * @throws ProviderNotFoundError when this uid does not run.
   * @throws Error naming an invalid annotation; nothing is changed then.
   */
  async updatePod(pod: V1Pod, signal?: AbortSignal): Promise<AppliedPodStatus> {
    const state = podState(pod);
    const plan = mockPodPlan(pod.metadata?.annotations);
    signal?.throwIfAborted();
    try {
      const updated = await this.table.update(
        mockPodKey(state.namespace, state.name),
        {
          expression:
            'SET #containers = :containers, #restartPolicy = :restartPolicy, #plan = :plan, #updates = #updates + :one, #version = #version + :one',
          names: {
            '#containers': 'containers',
            '#restartPolicy': 'restartPolicy',
            '#plan': 'plan',
            '#updates': 'updates',
            '#version': 'version',
          },
          values: {
            ':containers': state.containers,
            ':restartPolicy': state.restartPolicy,
            ':plan': plan,
            ':one': 1,
          },
        },
        { condition: runs(state.uid) },
      );
      return this.status(fromItem(updated));
    } catch (err) {
      if (isConditionFailed(err)) throw notFound(state, err);
      throw err;
    }
  }

  /**
   * Deletes the pod when this uid runs.
   * @throws ProviderNotFoundError when it does not (never created, already
   *   deleted, or replaced by a pod with another uid).
   */
  async deletePod(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    const state = podState(pod, { needsNode: false });
    signal?.throwIfAborted();
    const now = this.clock.now();
    const ttl = this.options.tombstoneTtlSeconds ?? DEFAULT_TOMBSTONE_TTL_SECONDS;
    try {
      await this.table.update(
        mockPodKey(state.namespace, state.name),
        {
          expression:
            'SET #deletedAt = :now, #expiresAt = :expiresAt, #deletes = #deletes + :one, #version = #version + :one REMOVE #gsi1pk, #gsi1sk',
          names: {
            '#deletedAt': 'deletedAt',
            '#expiresAt': 'expiresAt',
            '#deletes': 'deletes',
            '#version': 'version',
            '#gsi1pk': 'gsi1pk',
            '#gsi1sk': 'gsi1sk',
          },
          values: { ':now': now, ':expiresAt': Math.ceil(now / 1000) + ttl, ':one': 1 },
        },
        { condition: runs(state.uid) },
      );
    } catch (err) {
      if (isConditionFailed(err)) throw notFound(state, err);
      throw err;
    }
  }

  async getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod | undefined> {
    signal?.throwIfAborted();
    const record = await this.read(mockPodKey(namespace, name));
    if (!record || record.deletedAt !== undefined) return undefined;
    return mockPodObject(record, this.clock.now(), this.hostIp(record.node));
  }

  async listPods(nodeName: string, signal?: AbortSignal): Promise<V1Pod[]> {
    signal?.throwIfAborted();
    const items = await this.table.query(mockNodeIndexPartition(nodeName), { index: 'gsi1' });
    const now = this.clock.now();
    return items
      .map(fromItem)
      .filter((r) => r.deletedAt === undefined && r.node === nodeName)
      .map((r) => mockPodObject(r, now, this.hostIp(r.node)));
  }

  private async read(key: ItemKey): Promise<MockPodRecord | undefined> {
    const item = await this.table.get(key);
    return item ? fromItem(item) : undefined;
  }

  /** What getPod would report now for this record. */
  private status(record: MockPodRecord): AppliedPodStatus {
    return mockPodObject(record, this.clock.now(), this.hostIp(record.node)).status;
  }

  private hostIp(node: string): string {
    return this.options.hostIp ?? mockHostIp(node);
  }
}

/** The stored record of a pod, tombstones included: for tests that count provider calls. */
export async function mockPodRecord(
  table: StateTable,
  namespace: string,
  name: string,
): Promise<MockPodRecord | undefined> {
  const item = await table.get(mockPodKey(namespace, name));
  return item ? fromItem(item) : undefined;
}

/** The identity and spec essentials of a pod from the API server. */
function podState(
  pod: V1Pod,
  options: { needsNode: boolean } = { needsNode: true },
): Omit<MockPodState, 'plan' | 'createdAt'> {
  const namespace = pod.metadata?.namespace;
  const name = pod.metadata?.name;
  const uid = pod.metadata?.uid;
  const node = pod.spec?.nodeName ?? '';
  const missing = [
    ...(namespace ? [] : ['metadata.namespace']),
    ...(name ? [] : ['metadata.name']),
    ...(uid ? [] : ['metadata.uid']),
    ...(node || !options.needsNode ? [] : ['spec.nodeName']),
  ];
  if (!namespace || !name || !uid || missing.length > 0) {
    throw new Error(`mock provider: pod ${namespace ?? '?'}/${name ?? '?'} lacks ${missing.join(', ')}`);
  }
  const containers: MockContainer[] = (pod.spec?.containers ?? []).map((c) => ({
    name: c.name,
    image: c.image ?? '',
  }));
  return {
    namespace,
    name,
    uid,
    node,
    restartPolicy: pod.spec?.restartPolicy ?? 'Always',
    containers,
  };
}

function runs(uid: string): Expression {
  return {
    expression: 'attribute_exists(pk) AND #uid = :uid AND attribute_not_exists(#deletedAt)',
    names: { '#uid': 'uid', '#deletedAt': 'deletedAt' },
    values: { ':uid': uid },
  };
}

function versionIs(version: number): Expression {
  return { expression: '#version = :seen', names: { '#version': 'version' }, values: { ':seen': version } };
}

function notFound(
  pod: { namespace: string; name: string; uid: string },
  cause: unknown,
): ProviderNotFoundError {
  return new ProviderNotFoundError(`mock provider has no pod ${describe(pod)}`, { cause });
}

function describe(pod: { namespace: string; name: string; uid: string }): string {
  return `${pod.namespace}/${pod.name} (uid ${pod.uid})`;
}

function toItem(record: MockPodRecord): StoredItem {
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

function fromItem(item: StoredItem): MockPodRecord {
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
