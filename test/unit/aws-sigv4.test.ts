/**
 * Our SigV4 signer (lib/aws/sigv4.ts) signs as @smithy/signature-v4 does
 * with its defaults, which the SDK clients and the wire used before: the
 * same headers, the same Authorization, for DynamoDB's and SQS's requests,
 * with and without a session token, on paths that need escaping, with
 * values that need folding.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { type SignableRequest, SigV4Signer } from '../../lib/aws/sigv4.ts';

const at = new Date('2026-11-27T02:45:07.123Z');
const keys = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const withToken = { ...keys, sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE//token==' };

async function smithy(
  request: SignableRequest,
  service: string,
  region: string,
  credentials: typeof withToken | typeof keys,
  signingDate: Date = at,
) {
  const signer = new SignatureV4({ service, region, credentials, sha256: Hash.bind(null, 'sha256') });
  const [hostname, port] = request.host.split(':');
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'https:',
      hostname: hostname ?? '',
      ...(port ? { port: Number(port) } : {}),
      path: request.path,
      query: {},
      headers: { ...request.headers, host: request.host },
      body: request.body,
    },
    { signingDate },
  );
  return Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v]));
}

const body = JSON.stringify({ TableName: 'svk', Key: { pk: { S: 'pods#vk' }, sk: { S: 'ns/a' } } });
const cases: Array<[string, SignableRequest, string, string]> = [
  [
    'a DynamoDB GetItem',
    {
      method: 'POST',
      host: 'dynamodb.eu-west-1.amazonaws.com',
      path: '/',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'DynamoDB_20120810.GetItem',
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    },
    'dynamodb',
    'eu-west-1',
  ],
  [
    'an SQS SendMessage to a host with a port',
    {
      method: 'POST',
      host: 'sqs.us-east-1.amazonaws.com:8443',
      path: '/',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.SendMessage',
        'x-amzn-query-mode': 'true',
        'content-length': '2',
      },
      body: '{}',
    },
    'sqs',
    'us-east-1',
  ],
  [
    'a path that needs escaping and values that need folding',
    {
      method: 'POST',
      host: 'proxy.example.com',
      path: '/a%20b/./c/../d(1)/',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-custom': '  two   spaces\tand\na line ' },
      body: 'ü',
    },
    'dynamodb',
    'ap-southeast-2',
  ],
];

describe('SigV4 signing of our own requests', () => {
  for (const [what, request, service, region] of cases) {
    for (const credentials of [keys, withToken]) {
      it(`${what}, ${credentials === keys ? 'long-term keys' : 'with a session token'}: as @smithy/signature-v4 signs`, async () => {
        const ours = new SigV4Signer({ service, region }).sign(request, credentials, at);
        assert.deepEqual(ours, await smithy(request, service, region, credentials));
      });
    }
  }

  it('signs again with a new key on a new day or with new credentials', async () => {
    const [, request, service, region] = cases[0] ?? assert.fail();
    const signer = new SigV4Signer({ service, region });
    signer.sign(request, keys, at);
    const nextDay = new Date(at.getTime() + 86_400_000);
    assert.deepEqual(
      signer.sign(request, keys, nextDay),
      await smithy(request, service, region, keys, nextDay),
    );
    const rotated = { ...keys, secretAccessKey: 'rotated' };
    assert.deepEqual(signer.sign(request, rotated, at), await smithy(request, service, region, rotated));
  });
});
