import {
  type Expression,
  isConditionFailed,
  type StateTable,
  type StoredItem,
  type TransactWriteOp,
} from '../state/dynamodb.ts';
import {
  LockConflictError,
  type LockHandle,
  LockLostError,
  type LockRecord,
  type LockStore,
} from './lock.ts';

/** Lock records live at pk `lock#<name>`, sk `lock`. */
export function lockKey(name: string): { pk: string; sk: string } {
  return { pk: `lock#${name}`, sk: 'lock' };
}

/** The condition that `handle` still holds its lock: owner and epoch unchanged. */
function heldCondition(owner: string, epoch: number): Expression {
  return {
    expression: '#owner = :owner AND #epoch = :epoch',
    names: { '#owner': 'owner', '#epoch': 'epoch' },
    values: { ':owner': owner, ':epoch': epoch },
  };
}

function toItem(record: LockRecord): StoredItem {
  return { ...lockKey(record.name), ...record };
}

function fromItem(item: StoredItem): LockRecord {
  const { name, owner, epoch, rvn, ttlMs, updatedAt } = item;
  if (
    typeof name !== 'string' ||
    typeof epoch !== 'number' ||
    typeof rvn !== 'string' ||
    typeof ttlMs !== 'number'
  ) {
    throw new Error(`lock item ${item.pk} is malformed`);
  }
  return {
    name,
    ...(typeof owner === 'string' ? { owner } : {}),
    epoch,
    rvn,
    ttlMs,
    updatedAt: typeof updatedAt === 'string' ? updatedAt : '',
  };
}

/** Lock records in the state table; conditional-write failures become LockConflictError. */
export class DynamoDbLockStore implements LockStore {
  constructor(private readonly table: StateTable) {}

  async get(name: string): Promise<LockRecord | undefined> {
    const item = await this.table.get(lockKey(name));
    return item ? fromItem(item) : undefined;
  }

  create(record: LockRecord): Promise<void> {
    return this.conditional(() =>
      this.table.put(toItem(record), { condition: { expression: 'attribute_not_exists(pk)' } }),
    );
  }

  replaceIfVersion(expectedRvn: string, next: LockRecord): Promise<void> {
    return this.conditional(() =>
      this.table.put(toItem(next), {
        condition: { expression: '#rvn = :rvn', names: { '#rvn': 'rvn' }, values: { ':rvn': expectedRvn } },
      }),
    );
  }

  replaceIfHeld(owner: string, epoch: number, next: LockRecord): Promise<void> {
    return this.conditional(() => this.table.put(toItem(next), { condition: heldCondition(owner, epoch) }));
  }

  private async conditional(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (isConditionFailed(err)) throw new LockConflictError(err.message);
      throw err;
    }
  }
}

/**
 * Writes `ops` only if `handle` still holds its lock, in one transaction with
 * a condition check on the lock record: a deposed holder's write is rejected
 * with LockLostError and nothing is written.
 */
export async function fencedWrite(
  table: StateTable,
  handle: LockHandle,
  ops: TransactWriteOp[],
): Promise<void> {
  try {
    await table.transactWrite([
      { check: lockKey(handle.name), condition: heldCondition(handle.owner, handle.epoch) },
      ...ops,
    ]);
  } catch (err) {
    if (
      isConditionFailed(err) &&
      err.reasons.some((r) => r.index === 0 && r.code === 'ConditionalCheckFailed')
    ) {
      throw new LockLostError(handle.name, `fenced write rejected: epoch ${handle.epoch} no longer holds it`);
    }
    throw err;
  }
}
