import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ResourceInUseException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { load } from 'js-yaml';
import * as z from 'zod';

/**
 * Turns infra/dynamodb-table.yml (CloudFormation `AWS::DynamoDB::Table`
 * Properties, the one definition of the state table) into the API calls that
 * create the same table in DynamoDB Local. In AWS, CloudFormation creates the
 * table from the same file; nothing here runs there.
 *
 * What DynamoDB Local cannot reproduce:
 * - PointInTimeRecoverySpecification: not a CreateTable parameter
 *   (UpdateContinuousBackups in AWS), and DynamoDB Local rejects that
 *   operation as unknown. Reported in `notAppliedLocally`, never sent.
 * - SSESpecification: converted and sent (CloudFormation's `SSEEnabled` is the
 *   API's `Enabled`); DynamoDB Local accepts it and stores nothing encrypted.
 * - TimeToLiveSpecification: applied with UpdateTimeToLive after creation.
 *   DynamoDB Local does expire items, but like AWS with no promise on when.
 */

/** The table's file, next to serverless.yml. Resolved from this module, so not usable once bundled. */
export const TABLE_DEFINITION_PATH = new URL('../../infra/dynamodb-table.yml', import.meta.url);

const name = z.string().min(1);
const keySchema = z
  .array(z.strictObject({ AttributeName: name, KeyType: z.enum(['HASH', 'RANGE']) }))
  .min(1)
  .max(2);

// Strict on purpose: a property this module does not know would silently make
// the local table differ from the deployed one. Teach the conversion instead.
const tablePropertiesSchema = z.strictObject({
  BillingMode: z.literal('PAY_PER_REQUEST'),
  AttributeDefinitions: z
    .array(z.strictObject({ AttributeName: name, AttributeType: z.enum(['S', 'N', 'B']) }))
    .min(1),
  KeySchema: keySchema,
  GlobalSecondaryIndexes: z
    .array(
      z.strictObject({
        IndexName: name,
        KeySchema: keySchema,
        Projection: z.strictObject({
          ProjectionType: z.enum(['ALL', 'KEYS_ONLY', 'INCLUDE']),
          NonKeyAttributes: z.array(name).optional(),
        }),
      }),
    )
    .optional(),
  TimeToLiveSpecification: z.strictObject({ AttributeName: name, Enabled: z.boolean() }).optional(),
  PointInTimeRecoverySpecification: z
    .strictObject({
      PointInTimeRecoveryEnabled: z.boolean(),
      RecoveryPeriodInDays: z.number().int().optional(),
    })
    .optional(),
  SSESpecification: z
    .strictObject({
      SSEEnabled: z.boolean(),
      SSEType: z.enum(['KMS', 'AES256']).optional(),
      KMSMasterKeyId: name.optional(),
    })
    .optional(),
});

/** The CloudFormation properties this module understands. */
export type TableProperties = z.infer<typeof tablePropertiesSchema>;

/** The table as DynamoDB API inputs, independent of the table's name. */
export interface TableDefinition {
  createTable: Omit<CreateTableCommandInput, 'TableName'>;
  /** Attribute for UpdateTimeToLive; undefined when TTL is off. */
  ttlAttributeName: string | undefined;
  /** Properties of the file that createTable() cannot apply to DynamoDB Local. */
  notAppliedLocally: string[];
}

/** infra/dynamodb-table.yml is not what this module can convert. */
export class TableDefinitionError extends Error {
  override readonly name = 'TableDefinitionError';
}

/** An existing table's keys or indexes differ from the definition (e.g. an old `-dbPath` directory). */
export class TableMismatchError extends Error {
  override readonly name = 'TableMismatchError';
}

/** Reads and parses the YAML file; the result still needs {@link toTableDefinition}. */
export function loadTableProperties(path: URL | string = TABLE_DEFINITION_PATH): unknown {
  return load(readFileSync(path, 'utf8'));
}

/**
 * Converts parsed CloudFormation properties into API inputs.
 * @param properties the parsed YAML; read from {@link TABLE_DEFINITION_PATH} when omitted
 *   (pass it explicitly from bundled code, where that path does not exist).
 * @throws TableDefinitionError naming every unsupported or invalid property.
 */
export function toTableDefinition(properties: unknown = loadTableProperties()): TableDefinition {
  const parsed = tablePropertiesSchema.safeParse(properties);
  if (!parsed.success) {
    throw new TableDefinitionError(`invalid table definition:\n${z.prettifyError(parsed.error)}`);
  }
  const p = parsed.data;
  const createTable: Omit<CreateTableCommandInput, 'TableName'> = {
    BillingMode: p.BillingMode,
    AttributeDefinitions: p.AttributeDefinitions,
    KeySchema: p.KeySchema,
  };
  if (p.GlobalSecondaryIndexes) createTable.GlobalSecondaryIndexes = p.GlobalSecondaryIndexes;
  if (p.SSESpecification) {
    const { SSEEnabled, SSEType, KMSMasterKeyId } = p.SSESpecification;
    createTable.SSESpecification = { Enabled: SSEEnabled, SSEType, KMSMasterKeyId };
  }
  const notAppliedLocally: string[] = [];
  if (p.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled) {
    notAppliedLocally.push('PointInTimeRecoverySpecification');
  }
  const ttl = p.TimeToLiveSpecification;
  return { createTable, ttlAttributeName: ttl?.Enabled ? ttl.AttributeName : undefined, notAppliedLocally };
}

export interface CreateTableOptions {
  /** Parsed YAML, for bundled code; read from the file when omitted. */
  properties?: unknown;
  /** How long to wait for the table and its indexes to become ACTIVE. Default 30 s. */
  timeoutMs?: number;
}

/**
 * Creates the table (an existing table with the same keys and indexes is
 * fine), waits until it and its indexes are ACTIVE, and enables TTL.
 * Safe to call repeatedly and concurrently.
 * @returns whether this call created the table.
 * @throws TableMismatchError when an existing table has other keys or indexes.
 */
export async function createTable(
  client: DynamoDBClient,
  tableName: string,
  options: CreateTableOptions = {},
): Promise<{ created: boolean }> {
  const definition = toTableDefinition(options.properties);
  let created = true;
  try {
    await client.send(new CreateTableCommand({ ...definition.createTable, TableName: tableName }));
  } catch (err) {
    if (!isError(err, ResourceInUseException, 'ResourceInUseException')) throw err;
    created = false;
  }
  const table = await waitForActive(client, tableName, options.timeoutMs ?? 30_000);
  if (!created) assertSameShape(tableName, definition, table);
  if (definition.ttlAttributeName) await enableTtl(client, tableName, definition.ttlAttributeName);
  return { created };
}

async function waitForActive(client: DynamoDBClient, tableName: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { Table: table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (table?.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === 'ACTIVE');
    if (table && table.TableStatus === 'ACTIVE' && indexesActive) return table;
    if (Date.now() >= deadline) {
      throw new Error(`table ${tableName} not ACTIVE after ${timeoutMs} ms (status ${table?.TableStatus})`);
    }
    await delay(200);
  }
}

async function enableTtl(client: DynamoDBClient, tableName: string, attributeName: string): Promise<void> {
  const { TimeToLiveDescription: current } = await client.send(
    new DescribeTimeToLiveCommand({ TableName: tableName }),
  );
  // UpdateTimeToLive rejects enabling TTL that is already on.
  if (current?.TimeToLiveStatus === 'ENABLED' || current?.TimeToLiveStatus === 'ENABLING') {
    if (current.AttributeName === attributeName) return;
    throw new TableMismatchError(
      `table ${tableName} has TTL on ${current.AttributeName}, the definition says ${attributeName}`,
    );
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: attributeName, Enabled: true },
    }),
  );
}

function assertSameShape(tableName: string, definition: TableDefinition, table: TableDescription): void {
  const keys = (schema: { AttributeName?: string; KeyType?: string }[] | undefined) =>
    (schema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
  const shape = (
    keySchema: CreateTableCommandInput['KeySchema'],
    indexes: { IndexName?: string; KeySchema?: CreateTableCommandInput['KeySchema'] }[] | undefined,
  ) =>
    [keys(keySchema), ...(indexes ?? []).map((i) => `${i.IndexName}(${keys(i.KeySchema)})`).sort()].join(' ');
  const expected = shape(definition.createTable.KeySchema, definition.createTable.GlobalSecondaryIndexes);
  const actual = shape(table.KeySchema, table.GlobalSecondaryIndexes);
  if (expected !== actual) {
    throw new TableMismatchError(
      `table ${tableName} exists with keys/indexes "${actual}", the definition says "${expected}"; ` +
        'delete the table (or the local DynamoDB data directory) to recreate it',
    );
  }
}

// instanceof alone fails when two copies of the SDK end up in one process;
// the SDK sets `name` to the exception's shape name.
function isError(err: unknown, type: abstract new (...args: never[]) => Error, name: string): boolean {
  return err instanceof type || (err instanceof Error && err.name === name);
}
