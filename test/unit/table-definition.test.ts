import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  loadTableProperties,
  TableDefinitionError,
  toTableDefinition,
} from '../../lib/state/table-definition.ts';

describe('table definition from infra/dynamodb-table.yml', () => {
  const definition = toTableDefinition(loadTableProperties());

  it('keys the table on string pk/sk, billed per request', () => {
    const input = definition.createTable;
    assert.equal(input.BillingMode, 'PAY_PER_REQUEST');
    assert.deepEqual(input.KeySchema, [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    assert.deepEqual(input.AttributeDefinitions?.map((a) => [a.AttributeName, a.AttributeType]).sort(), [
      ['gsi1pk', 'S'],
      ['gsi1sk', 'S'],
      ['pk', 'S'],
      ['sk', 'S'],
    ]);
    assert.equal('TableName' in input, false);
  });

  it('has one index, gsi1 on gsi1pk/gsi1sk, projecting everything', () => {
    assert.deepEqual(definition.createTable.GlobalSecondaryIndexes, [
      {
        IndexName: 'gsi1',
        KeySchema: [
          { AttributeName: 'gsi1pk', KeyType: 'HASH' },
          { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ]);
  });

  it('expires items on expiresAt, encrypts, and reports PITR as not applied locally', () => {
    assert.equal(definition.ttlAttributeName, 'expiresAt');
    assert.equal(definition.createTable.SSESpecification?.Enabled, true);
    assert.deepEqual(definition.notAppliedLocally, ['PointInTimeRecoverySpecification']);
  });

  it('accepts the parsed object directly, as bundled code passes it', () => {
    const properties = {
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: false },
    };
    const minimal = toTableDefinition(properties);
    assert.equal(minimal.ttlAttributeName, undefined);
    assert.equal(minimal.createTable.GlobalSecondaryIndexes, undefined);
    assert.deepEqual(minimal.notAppliedLocally, []);
  });

  it('rejects properties it cannot reproduce locally, naming them', () => {
    const withStream = {
      ...(loadTableProperties() as object),
      TableName: 'fixed',
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
    };
    assert.throws(
      () => toTableDefinition(withStream),
      (err) =>
        err instanceof TableDefinitionError &&
        err.message.includes('TableName') &&
        err.message.includes('StreamSpecification'),
    );
    assert.throws(() => toTableDefinition({ BillingMode: 'PROVISIONED' }), TableDefinitionError);
  });
});
