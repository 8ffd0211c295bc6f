import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../aws/client-options.ts';

/**
 * The DynamoDB SDK clients, for the functions' state table (built once per
 * cold start by lib/app/dependencies.ts) and for tooling: tests,
 * benchmarks, `npm start` and the table's administration
 * (table-definition.ts). Timeouts, the invocation's deadline, retries and
 * keep-alive come from awsClientOptions (lib/aws/client-options.ts);
 * credentials, endpoints and signing are the SDK's.
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
  /**
   * `default-chain`: the SDK's default credential chain even for a loopback
   * endpoint, as in AWS (tests of credentials that expire); by default a
   * loopback endpoint gets DynamoDB Local's fixed key.
   */
  credentials?: 'default-chain';
}

export interface DynamoDbClients {
  /** The low-level client, for table administration (table-definition.ts). */
  client: DynamoDBClient;
  /** Native JavaScript values in and out; undefined attributes are dropped. */
  doc: DynamoDBDocumentClient;
}

export function isLoopback(endpoint: string): boolean {
  const { hostname } = new URL(endpoint);
  return hostname === 'localhost' || hostname === '[::1]' || hostname.startsWith('127.');
}

/** Builds the clients once per cold start, test run or tool, and shares them. */
export function createDynamoDbClient(options: DynamoDbClientOptions = {}): DynamoDbClients {
  const local =
    options.endpoint !== undefined && isLoopback(options.endpoint) && options.credentials !== 'default-chain';
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

/**
 * Whether a DynamoDB endpoint answers: one ListTables, one attempt of at most
 * `timeoutMs` (DynamoDB Local's readiness, lib/local/dynamodb-local.ts).
 */
export async function answersListTables(endpoint: string, timeoutMs: number): Promise<boolean> {
  const { client } = createDynamoDbClient({ endpoint, requestTimeoutMs: timeoutMs, maxAttempts: 1 });
  try {
    const { TableNames } = await client.send(new ListTablesCommand({}));
    return Array.isArray(TableNames);
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}
