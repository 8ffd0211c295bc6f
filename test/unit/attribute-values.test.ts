/**
 * The state table's own conversion of native values to DynamoDB attribute
 * values and back (lib/state/attribute-values.ts), checked against the
 * AWS SDK's (@aws-sdk/util-dynamodb, as the document client uses it with
 * removeUndefinedValues) on the shapes the table stores.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { retryDelayMs, retryKind } from '../../lib/aws/aws-retry.ts';
import { marshallItem, UnsupportedValueError, unmarshallItem } from '../../lib/state/attribute-values.ts';
import { DynamoDbServiceError } from '../../lib/state/dynamodb-wire.ts';

const items: Record<string, unknown>[] = [
  { pk: 'pods#vk', sk: 'ns/a', version: 3, uid: 'u', appliedHash: 'h', skipped: undefined },
  {
    pk: 'mock#pods#ns',
    sk: 'a',
    claim: { token: 't', owner: 'o', hash: 'h', until: '2026-01-01T00:00:00.000Z' },
    containers: [
      { name: 'c', image: 'i', run: { seconds: 1.5, exitCode: 0, ignoresTerm: false } },
      { name: 'd', image: '' },
    ],
    plan: { startDelaySeconds: 0, exitCode: -137 },
    createdAt: 1_764_201_600_123,
    flag: true,
    nothing: null,
    empty: [],
    nested: { deeper: { list: [1, 'two', false, null, { x: undefined, y: 0 }] } },
  },
  {
    pk: 'x',
    sk: 'y',
    names: new Set(['a', 'b']),
    numbers: new Set([1, 2.5]),
  },
];

describe('attribute values', () => {
  it('marshals as the SDK does, and reads back what the SDK reads', () => {
    for (const item of items) {
      const ours = marshallItem(item);
      assert.deepEqual(ours, marshall(item, { removeUndefinedValues: true }));
      assert.deepEqual(unmarshallItem(ours), unmarshall(marshall(item, { removeUndefinedValues: true })));
    }
  });

  it('sends binary values base64-encoded, as the JSON protocol carries them, and reads them back', () => {
    const item = { pk: 'x', sk: 'y', bytes: new Uint8Array([0, 255, 7]) };
    assert.deepEqual(marshallItem(item).bytes, { B: 'AP8H' });
    assert.deepEqual(unmarshallItem(marshallItem(item)), item);
  });

  it('refuses what has no attribute value, and numbers a JavaScript number cannot hold', () => {
    assert.throws(() => marshallItem({ f: () => 1 }), UnsupportedValueError);
    assert.throws(() => marshallItem({ n: Number.NaN }), UnsupportedValueError);
    assert.throws(() => marshallItem({ n: 10n }), UnsupportedValueError);
    assert.throws(() => unmarshallItem({ n: { N: '12345678901234567890123' } }), UnsupportedValueError);
    assert.deepEqual(unmarshallItem({ n: { N: '1e3' } }), { n: 1000 });
  });
});

describe('DynamoDB retries (the SDK standard strategy)', () => {
  const answered = (type: string, status: number) => new DynamoDbServiceError(type, 'm', status, 1);
  it('retries throttling, 5xx, timeouts and dropped connections; never a condition, a validation or an abort', () => {
    assert.equal(retryKind(answered('ProvisionedThroughputExceededException', 400)), 'throttling');
    assert.equal(retryKind(answered('ThrottlingException', 400)), 'throttling');
    assert.equal(retryKind(answered('InternalServerError', 500)), 'transient');
    assert.equal(retryKind(answered('HTTP503', 503)), 'transient');
    assert.equal(retryKind(Object.assign(new Error('x'), { name: 'TimeoutError' })), 'timeout');
    assert.equal(retryKind(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), 'transient');
    assert.equal(retryKind(answered('ConditionalCheckFailedException', 400)), undefined);
    assert.equal(retryKind(answered('TransactionCanceledException', 400)), undefined);
    assert.equal(retryKind(answered('ValidationException', 400)), undefined);
    assert.equal(retryKind(Object.assign(new Error('aborted'), { name: 'AbortError' })), undefined);
  });

  it('waits a random time up to 100 ms doubling (500 ms for throttling), at most 20 s', () => {
    assert.equal(
      retryDelayMs('transient', 1, () => 0.999),
      99,
    );
    assert.equal(
      retryDelayMs('transient', 3, () => 0.5),
      200,
    );
    assert.equal(
      retryDelayMs('throttling', 2, () => 0.5),
      500,
    );
    assert.equal(
      retryDelayMs('timeout', 20, () => 0.5),
      10_000,
    );
    assert.equal(
      retryDelayMs('throttling', 1, () => 0),
      0,
    );
  });
});
