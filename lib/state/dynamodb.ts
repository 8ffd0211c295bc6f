import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../aws/client-options.ts';
import { type Expression, keyCondition, placeholders, type SortKeyCondition } from './expression.ts';

/**
 * The DynamoDB adapter: the only module (with table-definition.ts) that talks
 * to the DynamoDB SDK. It owns the calls and the translation of their failures
 * into typed errors; the rules (what a lock, a known pod or a bookmark is, and
 * which versions a write requires) live in the stores built on top of it.
 */

export interface DynamoDbClientOptions {
  /** e.g. DynamoDB Local's http://127.0.0.1:<port>; the SDK's default endpoint when omitted. */
  endpoint?: string;
  /** Defaults to the SDK's own resolution (AWS_REGION in Lambda), or `local` for a loopback endpoint. */
  region?: string;
  /** Per HTTP attempt, so a stuck call cannot eat an invocation's time (see awsClientOptions). Default 5 s. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries of throttling and transient errors included. Default 3. */
  maxAttempts?: number;
}

export interface DynamoDbClients {
  /** The low-level client, for table administration (table-definition.ts). */
  client: DynamoDBClient;
  /** Native JavaScript values in and out; undefined attributes are dropped. */
  doc: DynamoDBDocumentClient;
}

/** Builds the clients once per cold start (or test run) and shares them. */
export function createDynamoDbClient(options: DynamoDbClientOptions = {}): DynamoDbClients {
  const local = options.endpoint !== undefined && isLoopback(options.endpoint);
  const client = new DynamoDBClient({
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.region !== undefined || local ? { region: options.region ?? 'local' } : {}),
    // DynamoDB Local wants some credential (letters and digits only) and checks no signature.
    ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    ...awsClientOptions({
      ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
      ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    }),
  });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return { client, doc };
}

function isLoopback(endpoint: string): boolean {
  const { hostname } = new URL(endpoint);
  return hostname === 'localhost' || hostname === '[::1]' || hostname.startsWith('127.');
}

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
    const condition = placeholders([options.condition]);
    await this.write('put', keyOf(item), () =>
      this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: options.condition?.expression,
          ...condition,
        }),
      ),
    );
  }

  /**
   * Applies an update expression (creating the item when it does not exist,
   * unless the condition requires it) and returns the item as written.
   * @throws ConditionFailedError when `condition` does not hold.
   */
  async update(
    key: ItemKey,
    update: Expression,
    options: { condition?: Expression } = {},
  ): Promise<StoredItem> {
    const output = await this.write('update', keyOf(key), () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keyOf(key),
          UpdateExpression: update.expression,
          ConditionExpression: options.condition?.expression,
          ...placeholders([update, options.condition]),
          ReturnValues: 'ALL_NEW',
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
          ConditionExpression: options.condition?.expression,
          ...placeholders([options.condition]),
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
          IndexName: options.index,
          KeyConditionExpression: condition.expression,
          ...placeholders([condition]),
          ScanIndexForward: options.ascending ?? true,
          ConsistentRead: !onIndex,
          Limit: remaining,
          ExclusiveStartKey: startKey,
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
      if ('put' in op) {
        const c = op.condition;
        return { Put: { TableName, Item: op.put, ConditionExpression: c?.expression, ...placeholders([c]) } };
      }
      if ('update' in op) {
        const c = op.condition;
        return {
          Update: {
            TableName,
            Key: keyOf(op.update),
            UpdateExpression: op.expression.expression,
            ConditionExpression: c?.expression,
            ...placeholders([op.expression, c]),
          },
        };
      }
      if ('delete' in op) {
        const c = op.condition;
        return {
          Delete: {
            TableName,
            Key: keyOf(op.delete),
            ConditionExpression: c?.expression,
            ...placeholders([c]),
          },
        };
      }
      const c = op.condition;
      return {
        ConditionCheck: {
          TableName,
          Key: keyOf(op.check),
          ConditionExpression: c.expression,
          ...placeholders([c]),
        },
      };
    });
    await this.write('transaction', undefined, () =>
      this.doc.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: options.token })),
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

function translate(err: unknown, what: string): unknown {
  if (isSdkError(err, ConditionalCheckFailedException, 'ConditionalCheckFailedException')) {
    return new ConditionFailedError(`${what}: condition not met`, [], { cause: err });
  }
  if (isSdkError(err, TransactionConflictException, 'TransactionConflictException')) {
    return new TransactionConflictError(`${what}: conflicts with a concurrent transaction`, [], {
      cause: err,
    });
  }
  if (isSdkError(err, TransactionCanceledException, 'TransactionCanceledException')) {
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

// instanceof alone fails when two copies of the SDK end up in one process;
// the SDK sets `name` to the exception's shape name.
function isSdkError<T extends Error>(
  err: unknown,
  type: abstract new (...args: never[]) => T,
  name: string,
): err is T {
  return err instanceof type || (err instanceof Error && err.name === name);
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
