import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type Expression, keyCondition, placeholders, type SortKeyCondition } from './expression.ts';

/**
 * The DynamoDB adapter: the only module of the functions that sends
 * DynamoDB calls, through the SDK's document client (built by
 * lib/state/dynamodb-clients.ts with the project's timeouts, deadline and
 * retries). It owns the calls and the translation of their failures into
 * typed errors; the rules (what a lock, a known pod or a bookmark is, and
 * which versions a write requires) live in the stores built on top of it.
 */

/** The primary key of every item in the state table. */
export interface ItemKey {
  pk: string;
  sk: string;
}

/** An item as stored: its key plus any attributes (native JavaScript values). */
export interface StoredItem extends ItemKey {
  [attribute: string]: unknown;
}

export interface QueryOptions {
  /** Query gsi1 (`gsi1pk`/`gsi1sk`) instead of the table (`pk`/`sk`). */
  index?: 'gsi1';
  sk?: SortKeyCondition;
  /** Stop after this many items. All matching items when omitted. */
  limit?: number;
  /** Sort-key order. Default true. */
  ascending?: boolean;
}

/** One write of a transaction. All of them succeed together or none does. */
export type TransactWriteOp =
  | { put: StoredItem; condition?: Expression }
  | { update: ItemKey; expression: Expression; condition?: Expression }
  | { delete: ItemKey; condition?: Expression }
  | { check: ItemKey; condition: Expression };

/** Why one operation of a cancelled transaction failed; `index` is its position in the call. */
export interface CancellationReason {
  index: number;
  /** DynamoDB's code, e.g. `ConditionalCheckFailed`, `TransactionConflict`, `None`. */
  code: string;
  message?: string;
}

/**
 * A write DynamoDB refused as a whole, so nothing was written. For a
 * transaction, `reasons` says why for each of its operations.
 */
export abstract class RefusedWriteError extends Error {
  constructor(
    message: string,
    readonly reasons: CancellationReason[] = [],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A write's condition did not hold (for a transaction, the operations whose `reasons` say so). */
export class ConditionFailedError extends RefusedWriteError {
  override readonly name = 'ConditionFailedError';
  /** The item as it stood, when the write asked for it (`update`'s `returnItemOnConditionFailure`). */
  item?: StoredItem;
}

/**
 * Another transaction was writing the same item at the same time. Not
 * retried by the SDK; safe to retry after re-reading.
 */
export class TransactionConflictError extends RefusedWriteError {
  override readonly name = 'TransactionConflictError';
}

export function isConditionFailed(err: unknown): err is ConditionFailedError {
  return err instanceof ConditionFailedError;
}

export function isTransactionConflict(err: unknown): err is TransactionConflictError {
  return err instanceof TransactionConflictError;
}

/**
 * Typed access to the state table. Every read is strongly consistent (except
 * on the index, where DynamoDB cannot be), because the callers decide from
 * what they read. Conditional failures surface as ConditionFailedError and
 * never leave a partial write behind.
 */
export class StateTable {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  /** The item, or undefined when there is none. */
  async get(key: ItemKey): Promise<StoredItem | undefined> {
    const { Item: item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
    );
    return item && isStoredItem(item) ? item : undefined;
  }

  /**
   * Creates or replaces the whole item.
   * @throws ConditionFailedError when `condition` does not hold.
   */
  async put(item: StoredItem, options: { condition?: Expression } = {}): Promise<void> {
    await this.write('put', keyOf(item), () =>
      this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ...conditionOf([options.condition], options.condition),
        }),
      ),
    );
  }

  /**
   * Applies an update expression (creating the item when it does not exist,
   * unless the condition requires it) and returns the item as written.
   * @param options.returnItemOnConditionFailure the failure carries the item
   *   as it stood (in the same request: no read after it).
   * @throws ConditionFailedError when `condition` does not hold.
   */
  async update(
    key: ItemKey,
    update: Expression,
    options: { condition?: Expression; returnItemOnConditionFailure?: boolean } = {},
  ): Promise<StoredItem> {
    const output = await this.write('update', keyOf(key), () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keyOf(key),
          UpdateExpression: update.expression,
          ...conditionOf([update, options.condition], options.condition),
          ReturnValues: 'ALL_NEW',
          ...(options.returnItemOnConditionFailure ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } : {}),
        }),
      ),
    );
    const item = output.Attributes;
    if (!item || !isStoredItem(item)) throw new Error(`update of ${describe(key)} returned no item`);
    return item;
  }

  /**
   * Deletes the item; deleting a missing item is not an error unless the condition says so.
   * @throws ConditionFailedError when `condition` does not hold.
   */
  async delete(key: ItemKey, options: { condition?: Expression } = {}): Promise<void> {
    await this.write('delete', keyOf(key), () =>
      this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: keyOf(key),
          ...conditionOf([options.condition], options.condition),
        }),
      ),
    );
  }

  /** Items of one partition (of the table or of gsi1) in sort-key order, all pages up to `limit`. */
  async query(partition: string, options: QueryOptions = {}): Promise<StoredItem[]> {
    const onIndex = options.index === 'gsi1';
    const condition = keyCondition(partition, options.sk, onIndex);
    const items: StoredItem[] = [];
    let startKey: QueryCommandInput['ExclusiveStartKey'];
    do {
      const remaining = options.limit === undefined ? undefined : options.limit - items.length;
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          ...(options.index ? { IndexName: options.index } : {}),
          KeyConditionExpression: condition.expression,
          ...conditionOf([condition]),
          ScanIndexForward: options.ascending ?? true,
          ConsistentRead: !onIndex,
          ...(remaining !== undefined ? { Limit: remaining } : {}),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const item of page.Items ?? []) if (isStoredItem(item)) items.push(item);
      startKey = page.LastEvaluatedKey;
    } while (startKey && (options.limit === undefined || items.length < options.limit));
    return items;
  }

  /**
   * Writes all operations atomically, or none.
   * @param options.token idempotency token: a retry with the same token and
   *   operations within 10 minutes succeeds without writing twice.
   * @throws ConditionFailedError when any condition does not hold (see `reasons`).
   * @throws TransactionConflictError when a concurrent transaction touched the same items.
   */
  async transactWrite(ops: TransactWriteOp[], options: { token?: string } = {}): Promise<void> {
    const TableName = this.tableName;
    const items: NonNullable<TransactWriteCommandInput['TransactItems']> = ops.map((op) => {
      const c = op.condition;
      if ('put' in op) return { Put: { TableName, Item: op.put, ...conditionOf([c], c) } };
      if ('update' in op) {
        const update = { UpdateExpression: op.expression.expression, ...conditionOf([op.expression, c], c) };
        return { Update: { TableName, Key: keyOf(op.update), ...update } };
      }
      if ('delete' in op) return { Delete: { TableName, Key: keyOf(op.delete), ...conditionOf([c], c) } };
      const check = { ...conditionOf([op.condition]), ConditionExpression: op.condition.expression };
      return { ConditionCheck: { TableName, Key: keyOf(op.check), ...check } };
    });
    await this.write('transaction', undefined, () =>
      this.doc.send(
        new TransactWriteCommand({
          TransactItems: items,
          ...(options.token ? { ClientRequestToken: options.token } : {}),
        }),
      ),
    );
  }

  private async write<T>(operation: string, key: ItemKey | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw translate(err, key ? `${operation} of ${describe(key)}` : operation);
    }
  }
}

/**
 * A request's ConditionExpression (when `condition` is given) and the
 * placeholders of `expressions` (native values: the document client
 * converts them).
 */
function conditionOf(
  expressions: (Expression | undefined)[],
  condition?: Expression,
): {
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
} {
  const { ExpressionAttributeNames, ExpressionAttributeValues } = placeholders(expressions);
  return {
    ...(condition ? { ConditionExpression: condition.expression } : {}),
    ...(ExpressionAttributeNames ? { ExpressionAttributeNames } : {}),
    ...(ExpressionAttributeValues ? { ExpressionAttributeValues } : {}),
  };
}

/**
 * DynamoDB's refusals as our typed errors, recognised by the error's type
 * (its `name`, which the SDK sets to the exception's shape name, so that
 * two copies of the SDK in one process still agree).
 */
export function translate(err: unknown, what: string): unknown {
  if (!(err instanceof Error)) return err;
  if (err.name === 'ConditionalCheckFailedException') {
    const failed = new ConditionFailedError(`${what}: condition not met`, [], { cause: err });
    const item = 'Item' in err ? itemOf(err.Item) : undefined;
    if (item && isStoredItem(item)) failed.item = item;
    return failed;
  }
  if (err.name === 'TransactionConflictException') {
    return new TransactionConflictError(`${what}: conflicts with a concurrent transaction`, [], {
      cause: err,
    });
  }
  if (err.name === 'TransactionCanceledException' && hasReasons(err)) {
    const reasons = (err.CancellationReasons ?? []).map((r, index) => ({
      index,
      code: r.Code ?? 'None',
      ...(r.Message !== undefined ? { message: r.Message } : {}),
    }));
    const failed = reasons.filter((r) => r.code !== 'None');
    const summary = failed.map((r) => `#${r.index} ${r.code}`).join(', ');
    if (failed.some((r) => r.code === 'ConditionalCheckFailed')) {
      return new ConditionFailedError(`${what}: cancelled (${summary})`, failed, { cause: err });
    }
    if (failed.length > 0 && failed.every((r) => r.code === 'TransactionConflict')) {
      return new TransactionConflictError(`${what}: cancelled (${summary})`, failed, { cause: err });
    }
  }
  return err;
}

/**
 * The item a ConditionalCheckFailedException carries (ReturnValuesOnConditionCheckFailure),
 * converted by the SDK's codec: the document client converts answers, not errors.
 */
function itemOf(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  return unmarshall(raw as Record<string, AttributeValue>);
}

/** TransactionCanceledException's reasons, one per operation of the transaction. */
type CancellationReasons = Array<{ Code?: string; Message?: string }>;

function hasReasons(err: Error): err is Error & { CancellationReasons?: CancellationReasons } {
  const reasons = 'CancellationReasons' in err ? err.CancellationReasons : undefined;
  return reasons === undefined || Array.isArray(reasons);
}

// Only the key attributes: callers often pass a whole item as its key.
function keyOf(key: ItemKey): ItemKey {
  return { pk: key.pk, sk: key.sk };
}

function describe(key: ItemKey): string {
  return `${key.pk} / ${key.sk}`;
}

function isStoredItem(item: Record<string, unknown>): item is StoredItem {
  return typeof item.pk === 'string' && typeof item.sk === 'string';
}
