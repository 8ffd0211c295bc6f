import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientOptions } from '../aws/client-options.ts';
import { dynamoDbWireOf, isLoopback, registerClientWire } from './dynamodb-wire.ts';

/**
 * The DynamoDB SDK clients of tooling: tests, benchmarks, `npm start` and
 * the table's administration (table-definition.ts). The functions never
 * load them: their state table speaks DynamoDB's JSON protocol itself
 * (createDynamoDbWire in dynamodb-wire.ts). A StateTable built on the
 * document client given here sends its calls as this client would (its
 * endpoint, region, credentials, timeout and attempts), on the same wire.
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

/** Builds the clients once per test run or tool and shares them. */
export function createDynamoDbClient(options: DynamoDbClientOptions = {}): DynamoDbClients {
  const local = options.endpoint !== undefined && isLoopback(options.endpoint);
  const settings = {
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
  };
  const client = new DynamoDBClient({
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.region !== undefined || local ? { region: options.region ?? 'local' } : {}),
    // DynamoDB Local wants some credential (letters and digits only) and checks no signature.
    ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    ...awsClientOptions(settings),
  });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  registerClientWire(doc, dynamoDbWireOf(client, settings));
  return { client, doc };
}
