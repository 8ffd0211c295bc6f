/**
 * Our AWS JSON-protocol wire (lib/aws/aws-json-wire.ts) against the SDK it
 * replaces on the functions' path: the same answer gives an error of the
 * same name through both (checked on loopback against the real SDK
 * clients), DynamoDB's refusals become our typed errors, the retry quota
 * and the modeled retryable errors decide as the SDK's standard strategy
 * does, and the regional endpoints are the ones the SDK's rules give.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  AwsResponseError,
  AwsServiceError,
  answerObject,
  serviceError,
} from '../../lib/aws/aws-json-errors.ts';
import { AwsJsonWire } from '../../lib/aws/aws-json-wire.ts';
import { RetryQuota, retryKind } from '../../lib/aws/aws-retry.ts';
import { credentialProvider } from '../../lib/aws/credentials.ts';
import { regionalEndpoint } from '../../lib/aws/endpoints.ts';
import { ConditionFailedError, TransactionConflictError, translate } from '../../lib/state/dynamodb.ts';
import { DYNAMODB } from '../../lib/state/dynamodb-wire.ts';
import { SQS } from '../../lib/tick/sqs-tick-queue.ts';

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

const servers: ReturnType<typeof createServer>[] = [];
after(() => {
  for (const server of servers) server.close();
});

/** A server that gives `answer` to every request, and notes each request's headers. */
async function answering(answer: Answer): Promise<{ url: string; seen: IncomingMessage['headers'][] }> {
  const seen: IncomingMessage['headers'][] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(answer.status, answer.headers ?? {}).end(answer.body));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return { url: `http://127.0.0.1:${address.port}`, seen };
}

const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' };

function wireAt(service: typeof DYNAMODB, url: string): AwsJsonWire {
  return new AwsJsonWire(
    service,
    async () => ({ url: new URL(url), region: 'us-east-1', credentials: credentialProvider(credentials) }),
    { maxAttempts: 1 },
  );
}

async function rejection(call: () => Promise<unknown>): Promise<Error> {
  try {
    await call();
  } catch (err) {
    assert.ok(err instanceof Error);
    return err;
  }
  assert.fail('the call succeeded');
}

const dynamoAnswers: Array<[string, Answer]> = [
  [
    'a condition',
    {
      status: 400,
      body: JSON.stringify({
        __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
        message: 'The conditional request failed',
      }),
    },
  ],
  [
    'a validation',
    { status: 400, body: JSON.stringify({ __type: 'ValidationException', Message: 'bad key' }) },
  ],
  [
    'the type in a header only',
    { status: 400, headers: { 'x-amzn-errortype': 'ResourceNotFoundException:http://x/' }, body: '{}' },
  ],
];

describe('errors DynamoDB answers with', () => {
  for (const [what, answer] of dynamoAnswers) {
    it(`${what}: the same name (and message, when it has one) as the SDK client's error`, async () => {
      const server = await answering(answer);
      const sdk = new DynamoDBClient({
        endpoint: server.url,
        region: 'us-east-1',
        credentials,
        maxAttempts: 1,
      });
      const expected = await rejection(() => sdk.send(new GetItemCommand({ TableName: 't', Key: {} })));
      const actual = await rejection(() => wireAt(DYNAMODB, server.url).send('GetItem', { TableName: 't' }));
      assert.ok(actual instanceof AwsServiceError);
      assert.equal(actual.name, expected.name);
      // Without one, the SDK says UnknownError; ours names the service, the status and the type.
      if (expected.message !== 'UnknownError') assert.equal(actual.message, expected.message);
      else assert.equal(actual.message, `DynamoDB answered 400 (${expected.name})`);
      assert.equal(actual.$metadata.httpStatusCode, answer.status);
      assert.equal(server.seen[1]?.['x-amz-target'], 'DynamoDB_20120810.GetItem');
      assert.equal(server.seen[1]?.['content-type'], 'application/x-amz-json-1.0');
      sdk.destroy();
    });
  }

  it('an answer that is not JSON (a proxy in the way) is an error of its status, retried as the SDK would', () => {
    const err = serviceError({ status: 502, headers: {}, body: '<html>Bad Gateway</html>' }, 1, {
      service: 'DynamoDB',
    });
    assert.equal(err.name, 'HTTP502');
    assert.equal(err.message, 'DynamoDB answered 502 (HTTP502)');
    assert.equal(retryKind(err), 'transient');
  });

  it('a 2xx answer whose body is no JSON object is refused, naming the service', () => {
    assert.deepEqual(answerObject('', 'DynamoDB'), {});
    assert.throws(() => answerObject('[1]', 'DynamoDB'), AwsResponseError);
    assert.throws(
      () => answerObject('not json', 'SQS'),
      /SQS answered with a body that is not a JSON object/,
    );
  });
});

describe('errors SQS answers with (query-compatible JSON)', () => {
  it('the same name as the SDK client, and the legacy query code and fault beside it', async () => {
    const server = await answering({
      status: 400,
      headers: { 'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender' },
      body: JSON.stringify({ __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'no such queue' }),
    });
    const sdk = new SQSClient({ endpoint: server.url, region: 'us-east-1', credentials, maxAttempts: 1 });
    const expected = await rejection(() =>
      sdk.send(new GetQueueAttributesCommand({ QueueUrl: `${server.url}/000000000000/q.fifo` })),
    );
    const actual = await rejection(() => wireAt(SQS, server.url).send('GetQueueAttributes', {}));
    assert.ok(actual instanceof AwsServiceError);
    assert.equal(actual.name, expected.name);
    assert.equal(actual.message, expected.message);
    assert.equal(actual.Code, 'AWS.SimpleQueueService.NonExistentQueue');
    assert.equal(actual.Type, 'Sender');
    assert.equal(server.seen[1]?.['x-amz-target'], 'AmazonSQS.GetQueueAttributes');
    assert.equal(server.seen[1]?.['x-amzn-query-mode'], 'true');
    sdk.destroy();
  });
});

describe("DynamoDB's refusals as our typed errors", () => {
  const answered = (type: string, reasons?: Array<{ Code?: string }>) =>
    new AwsServiceError(type, 'm', 400, 1, reasons ? { reasons } : {});

  it('a failed condition, alone or in a transaction, is a ConditionFailedError with the reasons that failed', () => {
    assert.ok(
      translate(answered('ConditionalCheckFailedException'), 'put of a / b') instanceof ConditionFailedError,
    );
    const cancelled = translate(
      answered('TransactionCanceledException', [{ Code: 'None' }, { Code: 'ConditionalCheckFailed' }]),
      'transaction',
    );
    assert.ok(cancelled instanceof ConditionFailedError);
    assert.deepEqual(cancelled.reasons, [{ index: 1, code: 'ConditionalCheckFailed' }]);
    assert.equal(cancelled.message, 'transaction: cancelled (#1 ConditionalCheckFailed)');
  });

  it('a conflict is a TransactionConflictError; anything else passes through as it came', () => {
    assert.ok(translate(answered('TransactionConflictException'), 'x') instanceof TransactionConflictError);
    const conflicts = answered('TransactionCanceledException', [{ Code: 'TransactionConflict' }]);
    assert.ok(translate(conflicts, 'x') instanceof TransactionConflictError);
    const throttled = answered('ProvisionedThroughputExceededException');
    assert.equal(translate(throttled, 'x'), throttled);
    assert.equal(translate('not an error', 'x'), 'not an error');
  });
});

describe('retry decisions', () => {
  it('the quota pays 100 retries (a timeout counts twice), then none, and a success gives back', () => {
    const quota = new RetryQuota();
    for (let i = 0; i < 99; i++) assert.equal(quota.take('transient'), 5);
    assert.equal(quota.take('timeout'), undefined, '5 tokens left, a timeout costs 10');
    assert.equal(quota.take('throttling'), 5);
    assert.equal(quota.take('throttling'), undefined);
    quota.release(undefined);
    assert.equal(quota.tokens, 1, 'a call without a retry gives back one token');
    quota.release(10);
    assert.equal(quota.tokens, 11, 'a call that retried gives back its last retry');
  });

  it("retries the errors a service's model marks retryable, only for that service", () => {
    const conflict = new AwsServiceError('ReplicatedWriteConflictException', 'm', 400, 1);
    assert.equal(retryKind(conflict, DYNAMODB.retryable), 'transient');
    assert.equal(retryKind(conflict, SQS.retryable), undefined);
  });
});

describe('regional endpoints', () => {
  const sdk = new DynamoDBClient({ region: 'us-east-1', credentials });
  after(() => sdk.destroy());

  for (const region of [
    'us-east-1',
    'eu-central-2',
    'ap-southeast-4',
    'il-central-1',
    'cn-north-1',
    'us-gov-west-1',
  ]) {
    it(`${region}: the endpoint the SDK's rules give`, () => {
      const expected = sdk.config.endpointProvider({
        Region: region,
        UseFIPS: false,
        UseDualStack: false,
      }).url;
      assert.equal(regionalEndpoint('dynamodb', region)?.href, expected.href);
    });
  }

  it("other partitions are left to the SDK's rules", () => {
    assert.equal(regionalEndpoint('dynamodb', 'us-iso-east-1'), undefined);
    assert.equal(regionalEndpoint('dynamodb', 'eusc-de-east-1'), undefined);
    assert.equal(regionalEndpoint('dynamodb', 'local'), undefined);
  });
});
