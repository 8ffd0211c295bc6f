import { isConditionFailed, type StateTable } from '../../state/dynamodb.ts';
import {
  type EcsPodRecord,
  ecsNodePartition,
  ecsPodKey,
  ecsUidKey,
  fromItem,
  isHeld,
  TOMBSTONE_TTL_SECONDS,
  toItem,
} from './ecs-pod-record.ts';

/** Another writer changed the record since it was read: read again and decide again. */
export class EcsRecordConflictError extends Error {
  override readonly name = 'EcsRecordConflictError';
}

export function isRecordConflict(err: unknown): err is EcsRecordConflictError {
  return err instanceof EcsRecordConflictError;
}

/** The ECS provider's pod records in the state table (layout in ecs-pod-record.ts). */
export class EcsPodStore {
  constructor(private readonly table: StateTable) {}

  async get(namespace: string, name: string): Promise<EcsPodRecord | undefined> {
    const item = await this.table.get(ecsPodKey(namespace, name));
    return item ? fromItem(item) : undefined;
  }

  /** The record of this uid (a tombstone included), or undefined when its name now holds another pod or none. */
  async getByUid(uid: string): Promise<EcsPodRecord | undefined> {
    const pointer = await this.table.get(ecsUidKey(uid));
    if (typeof pointer?.namespace !== 'string' || typeof pointer.name !== 'string') return undefined;
    const record = await this.get(pointer.namespace, pointer.name);
    return record?.uid === uid ? record : undefined;
  }

  /** The pods held on `node` (from gsi1, which DynamoDB updates asynchronously: a pod written a moment ago may be missing). */
  async listNode(node: string): Promise<EcsPodRecord[]> {
    const items = await this.table.query(ecsNodePartition(node), { index: 'gsi1' });
    return items.map(fromItem).filter((r) => r.node === node && isHeld(r));
  }

  /**
   * Writes a pod's first record (or replaces the record of `replacing`, the
   * version read of another uid's record under this name) together with its
   * uid item.
   * @throws EcsRecordConflictError when the name's record changed since it was read.
   */
  async create(record: EcsPodRecord, replacing?: EcsPodRecord): Promise<void> {
    const condition = replacing
      ? {
          expression: '#version = :seen',
          names: { '#version': 'version' },
          values: { ':seen': replacing.version },
        }
      : { expression: 'attribute_not_exists(pk)' };
    try {
      await this.table.transactWrite([
        { put: toItem(record), condition },
        { put: { ...ecsUidKey(record.uid), namespace: record.namespace, name: record.name } },
      ]);
    } catch (err) {
      if (isConditionFailed(err))
        throw new EcsRecordConflictError(`record ${record.namespace}/${record.name} changed`, { cause: err });
      throw err;
    }
  }

  /**
   * Writes `next` over `seen` (the version read), bumping the version.
   * @throws EcsRecordConflictError when another writer got there first.
   */
  async replace(seen: EcsPodRecord, next: Omit<EcsPodRecord, 'version'>): Promise<EcsPodRecord> {
    const written: EcsPodRecord = { ...next, version: seen.version + 1 };
    try {
      await this.table.put(toItem(written), {
        condition: {
          expression: '#version = :seen AND #uid = :uid',
          names: { '#version': 'version', '#uid': 'uid' },
          values: { ':seen': seen.version, ':uid': seen.uid },
        },
      });
    } catch (err) {
      if (isConditionFailed(err))
        throw new EcsRecordConflictError(`record ${seen.namespace}/${seen.name} changed`, { cause: err });
      throw err;
    }
    if (!isHeld(written) && isHeld(seen)) {
      // The uid item outlives nothing: it expires with the tombstone.
      await this.table.put({
        ...ecsUidKey(written.uid),
        namespace: written.namespace,
        name: written.name,
        expiresAt: Math.ceil((written.goneAt ?? 0) / 1000) + TOMBSTONE_TTL_SECONDS,
      });
    }
    return written;
  }
}
