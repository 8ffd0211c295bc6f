import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type AwsEndpoint,
  type AwsJsonService,
  AwsJsonWire,
  type AwsJsonWireOptions,
} from '../aws/aws-json-wire.ts';
import { type AwsCredentials, credentialProvider } from '../aws/credentials.ts';
import { regionalEndpoint } from '../aws/endpoints.ts';

/**
 * DynamoDB on the AWS JSON wire (lib/aws/aws-json-wire.ts): where its calls
 * go and as whom. The functions build it from their config, without the
 * SDK; tooling builds it from an SDK client (lib/state/dynamodb-clients.ts),
 * whose resolved configuration it then uses.
 */

export { AwsServiceError as DynamoDbServiceError } from '../aws/aws-json-errors.ts';

export const DYNAMODB: AwsJsonService = {
  name: 'DynamoDB',
  signingName: 'dynamodb',
  targetPrefix: 'DynamoDB_20120810',
  // The one DynamoDB error its model marks @retryable.
  retryable: new Set(['ReplicatedWriteConflictException']),
};

/** DynamoDB's calls for the state table: a wire with DynamoDB's settings. */
export type DynamoDbWire = AwsJsonWire;

export interface DynamoDbWireOptions extends AwsJsonWireOptions {
  /** e.g. DynamoDB Local's http://127.0.0.1:<port>; the region's endpoint when omitted. */
  endpoint?: string;
  region: string;
  /** The environment's credentials (lib/config); the SDK's provider chain, loaded when first needed, without them. */
  credentials?: AwsCredentials;
  /**
   * FIPS or dual-stack endpoints or AWS_ENDPOINT_URL(_DYNAMODB) are set: the
   * endpoint comes from the SDK's own rules, loaded when first needed.
   */
  sdkEndpointRules?: boolean;
}

/** DynamoDB Local wants some credential (letters and digits only) and checks no signature. */
const LOCAL_CREDENTIALS: AwsCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

export function isLoopback(endpoint: string): boolean {
  const { hostname } = new URL(endpoint);
  return hostname === 'localhost' || hostname === '[::1]' || hostname.startsWith('127.');
}

/** The wire the functions' state table uses, from their config. */
export function createDynamoDbWire(options: DynamoDbWireOptions): DynamoDbWire {
  const { endpoint, region } = options;
  const local = endpoint !== undefined && isLoopback(endpoint);
  const credentials = credentialProvider(local ? LOCAL_CREDENTIALS : options.credentials);
  const resolve = async (): Promise<AwsEndpoint> => {
    if (endpoint !== undefined) return { url: new URL(endpoint), region, credentials };
    const regional = options.sdkEndpointRules ? undefined : regionalEndpoint('dynamodb', region);
    return { url: regional ?? (await sdkEndpoint(region)), region, credentials };
  };
  return new AwsJsonWire(DYNAMODB, resolve, wireOptions(options));
}

/** The endpoint the SDK's rules give for `region` (FIPS, dual-stack, other partitions, endpoint variables). */
async function sdkEndpoint(region: string): Promise<URL> {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  const { url } = await endpointOfClient(new DynamoDBClient({ region }));
  return url;
}

/** A wire that sends as `client` would: its endpoint, region and credentials. */
export function dynamoDbWireOf(
  client: DynamoDBClient | DynamoDBDocumentClient,
  options: AwsJsonWireOptions = {},
): DynamoDbWire {
  return new AwsJsonWire(DYNAMODB, () => endpointOfClient(client), wireOptions(options));
}

/** The wire of each SDK client lib/state/dynamodb-clients.ts built, with that client's timeout and attempts. */
const wiresOfClients = new WeakMap<object, DynamoDbWire>();

export function registerClientWire(
  client: DynamoDBClient | DynamoDBDocumentClient,
  wire: DynamoDbWire,
): void {
  wiresOfClients.set(client, wire);
}

/** The wire a state table on `client` sends through: the one registered for it, or one with the defaults. */
export function wireOfClient(client: DynamoDBClient | DynamoDBDocumentClient): DynamoDbWire {
  let wire = wiresOfClients.get(client);
  if (!wire) {
    wire = dynamoDbWireOf(client);
    wiresOfClients.set(client, wire);
  }
  return wire;
}

async function endpointOfClient(client: DynamoDBClient | DynamoDBDocumentClient): Promise<AwsEndpoint> {
  const config = client.config;
  const region = await config.region();
  const custom = config.endpoint ? await config.endpoint() : undefined;
  const url = custom
    ? new URL(`${custom.protocol}//${custom.hostname}${custom.port ? `:${custom.port}` : ''}${custom.path}`)
    : config.endpointProvider({
        Region: region,
        UseFIPS: await config.useFipsEndpoint(),
        UseDualStack: await config.useDualstackEndpoint(),
      }).url;
  const credentials = async (): Promise<AwsCredentials> => config.credentials();
  return { url, region, credentials };
}

function wireOptions(options: AwsJsonWireOptions): AwsJsonWireOptions {
  return {
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
  };
}
