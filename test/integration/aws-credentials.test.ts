/**
 * What a warm sandbox does when its AWS credentials expire: the functions'
 * AWS clients resolve credentials through the SDK's default chain
 * (lib/aws/client-options.ts sets none), here served by a container
 * credentials endpoint on loopback (AWS_CONTAINER_CREDENTIALS_FULL_URI, as
 * ECS and Lambda SnapStart serve them) that hands out credentials expiring
 * 5 minutes and a few seconds after each fetch. A DynamoDB client built as
 * the functions build theirs (createDynamoDbClient, with the default chain
 * instead of DynamoDB Local's fixed key) calls DynamoDB Local, which checks
 * no signature: the access key each request was signed with shows which
 * credentials it used.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { testEnv } from '../support/env.ts';
import { waitFor } from '../support/kube.ts';

const env = testEnv();
/** The SDK refreshes credentials within this long of their expiry (credential-provider-node). */
const SDK_REFRESH_WINDOW_MS = 300_000;
const AUTHORIZATION = 'container-credentials-test-token';

let server: Server;
const handedOut: Array<{ accessKeyId: string; expiresAt: number }> = [];
const refused: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    if (req.headers.authorization !== AUTHORIZATION) {
      refused.push(String(req.headers.authorization));
      res.writeHead(401).end();
      return;
    }
    const accessKeyId = `ASIATEST${String(handedOut.length + 1).padStart(4, '0')}`;
    const expiresAt = Date.now() + SDK_REFRESH_WINDOW_MS + 3_000;
    handedOut.push({ accessKeyId, expiresAt });
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        AccessKeyId: accessKeyId,
        SecretAccessKey: 'secret',
        Token: `session-${handedOut.length}`,
        Expiration: new Date(expiresAt).toISOString(),
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The default chain, with nothing before the container endpoint: no keys in the environment, no files.
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'])
    delete process.env[name];
  process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent';
  process.env.AWS_CONFIG_FILE = '/nonexistent';
  process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI = `http://127.0.0.1:${(server.address() as AddressInfo).port}/credentials`;
  process.env.AWS_CONTAINER_AUTHORIZATION_TOKEN = AUTHORIZATION;
});

after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('AWS credentials that expire in a warm sandbox', () => {
  it('the SDK fetches new ones before they expire, and no call fails', async () => {
    const { client } = createDynamoDbClient({
      endpoint: env.dynamodb.endpoint,
      region: env.dynamodb.region,
      credentials: 'default-chain',
    });
    const signedWith: string[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        const headers = (args.request as { headers?: Record<string, string> }).headers ?? {};
        const key = /Credential=([^/]+)\//.exec(headers.authorization ?? '')?.[1];
        if (key) signedWith.push(key);
        return next(args);
      },
      { step: 'deserialize', name: 'recordSigningKey' },
    );
    await client.send(new ListTablesCommand({}));
    assert.deepEqual(signedWith, ['ASIATEST0001'], 'the first call fetched and used the first credentials');
    const first = handedOut[0] ?? assert.fail('no credentials handed out');

    // The first credentials come within the SDK's refresh window: calls go on, and soon use new ones.
    await waitFor(() => Date.now() > first.expiresAt - SDK_REFRESH_WINDOW_MS, {
      timeoutMs: 10_000,
      intervalMs: 100,
      what: 'the first credentials within the refresh window',
    });
    await waitFor(
      async () => {
        await client.send(new ListTablesCommand({}));
        return signedWith.at(-1) === 'ASIATEST0002';
      },
      { timeoutMs: 15_000, intervalMs: 200, what: 'a call signed with the second credentials' },
    );
    assert.ok(handedOut.length >= 2, 'the endpoint was asked again');
    assert.deepEqual(refused, [], 'every fetch carried the authorization token');
    assert.ok(
      signedWith.every((key, i) => i === 0 || key >= (signedWith[i - 1] ?? '')),
      `never back to older credentials: ${signedWith.join(', ')}`,
    );
    client.destroy();
  });
});
