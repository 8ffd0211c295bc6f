import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { ConditionFailedError, type ItemKey, StateTable } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { testEnv } from '../support/env.ts';

const env = testEnv();
const { client, doc } = createDynamoDbClient({
  endpoint: env.dynamodb.endpoint,
  region: env.dynamodb.region,
});
const table = new StateTable(doc, env.dynamodb.tableName);
after(() => client.destroy());

/** A partition no other test (or earlier run) writes to. */
function uniqueKey(sk = 'item'): ItemKey {
  return { pk: `test#${randomUUID()}`, sk };
}

const notExists = { expression: 'attribute_not_exists(pk)' };

function versionIs(version: number) {
  return {
    expression: '#version = :expected',
    names: { '#version': 'version' },
    values: { ':expected': version },
  };
}

describe('StateTable against DynamoDB Local', () => {
  it('creates an item once: a second create is rejected and changes nothing', async () => {
    const key = uniqueKey();
    await table.put({ ...key, owner: 'first', version: 1 }, { condition: notExists });

    await assert.rejects(
      table.put({ ...key, owner: 'second', version: 1 }, { condition: notExists }),
      (err) => err instanceof ConditionFailedError && err.reasons.length === 0,
    );
    assert.deepEqual(await table.get(key), { ...key, owner: 'first', version: 1 });
  });

  it('updates on the expected version and rejects a stale one', async () => {
    const key = uniqueKey();
    await table.put({ ...key, owner: 'a', version: 1 }, { condition: notExists });
    const bump = (owner: string) => ({
      expression: 'SET #owner = :owner, #version = #version + :one',
      names: { '#owner': 'owner', '#version': 'version' },
      values: { ':owner': owner, ':one': 1 },
    });

    const written = await table.update(key, bump('b'), { condition: versionIs(1) });
    assert.deepEqual(written, { ...key, owner: 'b', version: 2 });

    await assert.rejects(table.update(key, bump('c'), { condition: versionIs(1) }), ConditionFailedError);
    assert.deepEqual(await table.get(key), { ...key, owner: 'b', version: 2 });
  });

  it('writes nothing from a transaction when one condition fails, and says which', async () => {
    const fresh = uniqueKey();
    const guarded = uniqueKey();
    const removable = uniqueKey();
    await table.put({ ...guarded, version: 5 });
    await table.put({ ...removable, version: 1 });

    await assert.rejects(
      table.transactWrite([
        { put: { ...fresh, version: 1 }, condition: notExists },
        {
          update: guarded,
          expression: {
            expression: 'SET #version = :next',
            names: { '#version': 'version' },
            values: { ':next': 6 },
          },
          condition: versionIs(4),
        },
        { delete: removable },
      ]),
      (err) => {
        assert.ok(err instanceof ConditionFailedError);
        assert.deepEqual(
          err.reasons.map((r) => [r.index, r.code]),
          [[1, 'ConditionalCheckFailed']],
        );
        return true;
      },
    );
    assert.equal(await table.get(fresh), undefined);
    assert.deepEqual(await table.get(guarded), { ...guarded, version: 5 });
    assert.deepEqual(await table.get(removable), { ...removable, version: 1 });
  });

  it('commits a transaction whose conditions all hold', async () => {
    const fresh = uniqueKey();
    const guarded = uniqueKey();
    await table.put({ ...guarded, version: 5 });

    await table.transactWrite([
      { put: { ...fresh, version: 1 }, condition: notExists },
      { check: guarded, condition: versionIs(5) },
    ]);
    assert.deepEqual(await table.get(fresh), { ...fresh, version: 1 });
  });

  it('deletes only when the condition holds', async () => {
    const key = uniqueKey();
    await table.put({ ...key, version: 2 });

    await assert.rejects(table.delete(key, { condition: versionIs(1) }), ConditionFailedError);
    assert.ok(await table.get(key));
    await table.delete(key, { condition: versionIs(2) });
    assert.equal(await table.get(key), undefined);
  });

  it('queries a partition by sort key, and gsi1 by time', async () => {
    const pk = `test#${randomUUID()}`;
    const due = `due#${randomUUID()}`;
    await table.put({ pk, sk: 'pod#default/a', gsi1pk: due, gsi1sk: '2030-01-01T00:00:02Z#a' });
    await table.put({ pk, sk: 'pod#default/b', gsi1pk: due, gsi1sk: '2030-01-01T00:00:01Z#b' });
    await table.put({ pk, sk: 'status' });

    const pods = await table.query(pk, { sk: { op: 'begins_with', value: 'pod#' } });
    assert.deepEqual(
      pods.map((i) => i.sk),
      ['pod#default/a', 'pod#default/b'],
    );
    assert.deepEqual(
      (await table.query(pk, { limit: 2, ascending: false })).map((i) => i.sk),
      ['status', 'pod#default/b'],
    );

    // A GSI is eventually consistent by contract (DynamoDB Local happens to be immediate).
    const deadline = Date.now() + 10_000;
    let dueByThen: string[] = [];
    for (;;) {
      const items = await table.query(due, {
        index: 'gsi1',
        sk: { op: '<=', value: '2030-01-01T00:00:02Z~' },
      });
      dueByThen = items.map((i) => i.sk);
      if (dueByThen.length >= 2 || Date.now() > deadline) break;
      await delay(50);
    }
    assert.deepEqual(dueByThen, ['pod#default/b', 'pod#default/a']);
  });
});
