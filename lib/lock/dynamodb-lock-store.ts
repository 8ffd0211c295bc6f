import {
  isConditionFailed,
  type StateTable,
  type StoredItem,
  type TransactWriteOp,
} from '../state/dynamodb.ts';
import type { Expression } from '../state/expression.ts';
import {
  LockConflictError,
  type LockFence,
  type LockHandle,
  LockLostError,
  type LockRecord,
  type LockStore,
  type LockTurn,
  type LockTurnOutcome,
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

/**
 * Lock records in the state table; conditional-write failures become
 * LockConflictError. Also the lock's fence: a lock is held while its record
 * keeps the holder's owner and epoch, the one condition that renewal,
 * release, fenced writes and the leadership check all use.
 */
export class DynamoDbLockStore implements LockStore, LockFence {
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

  /**
   * One UpdateItem: the epoch raised by one (from 0 when there is no record)
   * on the condition that the record has no owner or `turn.owner` is it
   * (turnEpoch in lock.ts), returning the record as written, or, when the
   * condition fails, the record as it stood, from the same request.
   */
  async advance(turn: LockTurn): Promise<LockTurnOutcome> {
    const { name, owner, rvn, ttlMs, updatedAt } = turn;
    try {
      const item = await this.table.update(
        lockKey(name),
        {
          expression:
            'SET #name = :name, #owner = :owner, #rvn = :rvn, #ttlMs = :ttlMs, #updatedAt = :updatedAt, ' +
            '#epoch = if_not_exists(#epoch, :zero) + :one',
          names: {
            '#name': 'name',
            '#owner': 'owner',
            '#rvn': 'rvn',
            '#ttlMs': 'ttlMs',
            '#updatedAt': 'updatedAt',
            '#epoch': 'epoch',
          },
          values: {
            ':name': name,
            ':owner': owner,
            ':rvn': rvn,
            ':ttlMs': ttlMs,
            ':updatedAt': updatedAt,
            ':zero': 0,
            ':one': 1,
          },
        },
        {
          condition: {
            expression: 'attribute_not_exists(#owner) OR #owner = :owner',
            names: { '#owner': 'owner' },
            values: { ':owner': owner },
          },
          returnItemOnConditionFailure: true,
        },
      );
      return { taken: fromItem(item) };
    } catch (err) {
      if (isConditionFailed(err) && err.item) return { heldBy: fromItem(err.item) };
      if (isConditionFailed(err)) throw new LockConflictError(err.message);
      throw err;
    }
  }

  /** One transaction: the condition check on the lock record first, then `ops`. */
  async fencedWrite(handle: LockHandle, ops: TransactWriteOp[]): Promise<void> {
    try {
      await this.table.transactWrite([
        { check: lockKey(handle.name), condition: heldCondition(handle.owner, handle.epoch) },
        ...ops,
      ]);
    } catch (err) {
      if (
        isConditionFailed(err) &&
        err.reasons.some((r) => r.index === 0 && r.code === 'ConditionalCheckFailed')
      ) {
        throw new LockLostError(handle.name, `epoch ${handle.epoch} no longer holds it`);
      }
      throw err;
    }
  }

  /** The fenced write of nothing: the same condition check, alone in its transaction. */
  assertHeld(handle: LockHandle): Promise<void> {
    return this.fencedWrite(handle, []);
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
