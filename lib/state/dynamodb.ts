import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CancellationReasons } from '../aws/aws-json-errors.ts';
import { AwsJsonWire } from '../aws/aws-json-wire.ts';
import { type AttributeValue, marshallItem, marshallValue, unmarshallItem } from './attribute-values.ts';
import { type DynamoDbWire, wireOfClient } from './dynamodb-wire.ts';
import { type Expression, keyCondition, placeholders, type SortKeyCondition } from './expression.ts';

/**
 * The DynamoDB adapter: the only module of the functions that talks to
 * DynamoDB. It owns the calls, sent on DynamoDB's JSON protocol
 * (lib/state/dynamodb-wire.ts) without the SDK, and the translation of
 * their failures into typed errors; the rules (what a lock, a known pod or
 * a bookmark is, and which versions a write requires) live in the stores
 * built on top of it. Tooling (tests, benchmarks, table administration)
 * builds its SDK clients with lib/state/dynamodb-clients.ts, and a table
 * on one of them sends as that client would.
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
 * never leave a partial write behind. Calls go through a {@link DynamoDbWire}:
 * the functions' own (createDynamoDbWire), or the one of a document client
 * of tooling's, whose `doc` is then there for what the table does not offer.
 */
export class StateTable {
  readonly #wire: DynamoDbWire;
  readonly #doc: DynamoDBDocumentClient | undefined;

  constructor(
    source: DynamoDbWire | DynamoDBDocumentClient,
    readonly tableName: string,
  ) {
    if (source instanceof AwsJsonWire) {
      this.#wire = source;
      this.#doc = undefined;
    } else {
      this.#wire = wireOfClient(source);
      this.#doc = source;
    }
  }

  /**
   * The document client this table was built on (tooling only).
   * @throws Error when it was built on a wire alone, as the functions build theirs.
   */
  get doc(): DynamoDBDocumentClient {
    if (!this.#doc) throw new Error(`the state table ${this.tableName} was built without an SDK client`);
    return this.#doc;
  }

  /** The item, or undefined when there is none. */
  async get(key: ItemKey): Promise<StoredItem | undefined> {
    const output = await this.#wire.send('GetItem', {
      TableName: this.tableName,
      Key: keyValues(key),
      ConsistentRead: true,
    });
    const item = itemOf(output.Item);
    return item && isStoredItem(item) ? item : undefined;
  }

  /**
   * Creates or replaces the whole item.
   * @throws ConditionFailedError when `condition` does not hold.
   */
  async put(item: StoredItem, options: { condition?: Expression } = {}): Promise<void> {
    await this.write('put', keyOf(item), 'PutItem', {
      TableName: this.tableName,
      Item: marshallItem(item),
      ...conditionOf([options.condition], options.condition),
    });
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
    const output = await this.write('update', keyOf(key), 'UpdateItem', {
      TableName: this.tableName,
      Key: keyValues(key),
      UpdateExpression: update.expression,
      ...conditionOf([update, options.condition], options.condition),
      ReturnValues: 'ALL_NEW',
      ...(options.returnItemOnConditionFailure ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } : {}),
    });
    const item = itemOf(output.Attributes);
    if (!item || !isStoredItem(item)) throw new Error(`update of ${describe(key)} returned no item`);
    return item;
  }

  /**
   * Deletes the item; deleting a missing item is not an error unless the condition says so.
   * @throws ConditionFailedError when `condition` does not hold.
   */
  async delete(key: ItemKey, options: { condition?: Expression } = {}): Promise<void> {
    await this.write('delete', keyOf(key), 'DeleteItem', {
      TableName: this.tableName,
      Key: keyValues(key),
      ...conditionOf([options.condition], options.condition),
    });
  }

  /** Items of one partition (of the table or of gsi1) in sort-key order, all pages up to `limit`. */
  async query(partition: string, options: QueryOptions = {}): Promise<StoredItem[]> {
    const onIndex = options.index === 'gsi1';
    const condition = keyCondition(partition, options.sk, onIndex);
    const items: StoredItem[] = [];
    let startKey: unknown;
    do {
      const remaining = options.limit === undefined ? undefined : options.limit - items.length;
      const page = await this.#wire.send('Query', {
        TableName: this.tableName,
        ...(options.index ? { IndexName: options.index } : {}),
        KeyConditionExpression: condition.expression,
        ...conditionOf([condition]),
        ScanIndexForward: options.ascending ?? true,
        ConsistentRead: !onIndex,
        ...(remaining !== undefined ? { Limit: remaining } : {}),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      });
      for (const raw of Array.isArray(page.Items) ? page.Items : []) {
        const item = itemOf(raw);
        if (item && isStoredItem(item)) items.push(item);
      }
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
    const items = ops.map((op) => {
      const c = op.condition;
      if ('put' in op) return { Put: { TableName, Item: marshallItem(op.put), ...conditionOf([c], c) } };
      if ('update' in op) {
        const key = keyValues(op.update);
        const update = { UpdateExpression: op.expression.expression, ...conditionOf([op.expression, c], c) };
        return { Update: { TableName, Key: key, ...update } };
      }
      if ('delete' in op) return { Delete: { TableName, Key: keyValues(op.delete), ...conditionOf([c], c) } };
      return { ConditionCheck: { TableName, Key: keyValues(op.check), ...conditionOf([c], c) } };
    });
    await this.write('transaction', undefined, 'TransactWriteItems', {
      TransactItems: items,
      ...(options.token ? { ClientRequestToken: options.token } : {}),
    });
  }

  private async write(
    operation: string,
    key: ItemKey | undefined,
    call: string,
    input: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    try {
      return await this.#wire.send(call, input);
    } catch (err) {
      throw translate(err, key ? `${operation} of ${describe(key)}` : operation);
    }
  }
}

/**
 * A request's ConditionExpression (when `condition` is given) and the
 * placeholders of `expressions`, their values converted to attribute values.
 */
function conditionOf(
  expressions: (Expression | undefined)[],
  condition?: Expression,
): {
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
} {
  const { ExpressionAttributeNames, ExpressionAttributeValues } = placeholders(expressions);
  return {
    ...(condition ? { ConditionExpression: condition.expression } : {}),
    ...(ExpressionAttributeNames ? { ExpressionAttributeNames } : {}),
    ...(ExpressionAttributeValues
      ? {
          ExpressionAttributeValues: Object.fromEntries(
            Object.entries(ExpressionAttributeValues).map(([k, v]) => [k, marshallValue(v)]),
          ),
        }
      : {}),
  };
}

/** An item of an answer, converted to native values; undefined when the answer has none. */
function itemOf(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  return unmarshallItem(raw as Record<string, AttributeValue>);
}

/** DynamoDB's refusals as our typed errors, recognised by the error's type (its `name`). */
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

function hasReasons(err: Error): err is Error & { CancellationReasons?: CancellationReasons } {
  const reasons = 'CancellationReasons' in err ? err.CancellationReasons : undefined;
  return reasons === undefined || Array.isArray(reasons);
}

// Only the key attributes: callers often pass a whole item as its key.
function keyOf(key: ItemKey): ItemKey {
  return { pk: key.pk, sk: key.sk };
}

/** The key attributes as attribute values. */
function keyValues(key: ItemKey): Record<string, AttributeValue> {
  return { pk: { S: key.pk }, sk: { S: key.sk } };
}

function describe(key: ItemKey): string {
  return `${key.pk} / ${key.sk}`;
}

function isStoredItem(item: Record<string, unknown>): item is StoredItem {
  return typeof item.pk === 'string' && typeof item.sk === 'string';
}
