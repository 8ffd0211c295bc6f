/**
 * DynamoDB's refusals, as the SDK's document client receives them from a
 * loopback server answering as DynamoDB does, become the state table's typed
 * errors (lib/state/dynamodb.ts): a failed condition, alone or in a
 * transaction, is a ConditionFailedError with the reasons that failed; a
 * conflict is a TransactionConflictError; anything else passes through as
 * the SDK gave it.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { ConditionFailedError, StateTable, TransactionConflictError } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import type { Expression } from '../../lib/state/expression.ts';

const servers: ReturnType<typeof createServer>[] = [];
after(() => {
  for (const server of servers) server.close();
});

/** A table whose every call DynamoDB refuses with `type` (and `extra` fields). */
async function refusingTable(type: string, extra: Record<string, unknown> = {}): Promise<StateTable> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' }).end(
        JSON.stringify({
          __type: `com.amazonaws.dynamodb.v20120810#${type}`,
          message: 'refused',
          ...extra,
        }),
      ),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  const { doc } = createDynamoDbClient({ endpoint: `http://127.0.0.1:${address.port}`, maxAttempts: 1 });
  return new StateTable(doc, 'svk');
}

const key = { pk: 'a', sk: 'b' };
const condition: Expression = { expression: '#h = :h', names: { '#h': 'holder' }, values: { ':h': 'me' } };

describe("DynamoDB's refusals as the state table's typed errors", () => {
  it('a failed condition is a ConditionFailedError naming the write, the SDK error as its cause', async () => {
    const table = await refusingTable('ConditionalCheckFailedException');
    const err = await table.put({ ...key, holder: 'you' }, { condition }).catch((e: unknown) => e);
    assert.ok(err instanceof ConditionFailedError);
    assert.equal(err.message, 'put of a / b: condition not met');
    assert.equal((err.cause as Error).name, 'ConditionalCheckFailedException');
  });

  it('a failed condition carries the item as it stood when the update asked for it, converted', async () => {
    const table = await refusingTable('ConditionalCheckFailedException', {
      Item: { pk: { S: 'a' }, sk: { S: 'b' }, holder: { S: 'you' }, epoch: { N: '3' } },
    });
    const err = await table
      .update(
        key,
        { expression: 'SET #h = :h', names: { '#h': 'holder' }, values: { ':h': 'me' } },
        {
          condition,
          returnItemOnConditionFailure: true,
        },
      )
      .catch((e: unknown) => e);
    assert.ok(err instanceof ConditionFailedError);
    assert.deepEqual(err.item, { pk: 'a', sk: 'b', holder: 'you', epoch: 3 });
  });

  it('a transaction cancelled by a condition is a ConditionFailedError with the reasons that failed', async () => {
    const table = await refusingTable('TransactionCanceledException', {
      CancellationReasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed', Message: 'no' }],
    });
    const err = await table
      .transactWrite([{ put: { ...key } }, { check: { pk: 'c', sk: 'd' }, condition }])
      .catch((e: unknown) => e);
    assert.ok(err instanceof ConditionFailedError);
    assert.deepEqual(err.reasons, [{ index: 1, code: 'ConditionalCheckFailed', message: 'no' }]);
    assert.equal(err.message, 'transaction: cancelled (#1 ConditionalCheckFailed)');
  });

  it('a conflict, alone or as every reason of a cancelled transaction, is a TransactionConflictError', async () => {
    const alone = await refusingTable('TransactionConflictException');
    assert.ok((await alone.delete(key).catch((e: unknown) => e)) instanceof TransactionConflictError);
    const cancelled = await refusingTable('TransactionCanceledException', {
      CancellationReasons: [{ Code: 'TransactionConflict' }],
    });
    const err = await cancelled.transactWrite([{ delete: key }]).catch((e: unknown) => e);
    assert.ok(err instanceof TransactionConflictError);
    assert.deepEqual(err.reasons, [{ index: 0, code: 'TransactionConflict' }]);
  });

  it('anything else passes through as the SDK gave it', async () => {
    const table = await refusingTable('ValidationException');
    const err = await table
      .update(key, { expression: 'SET x = :x', values: { ':x': 1 } })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'ValidationException');
    assert.equal(err.message, 'refused');
  });
});
