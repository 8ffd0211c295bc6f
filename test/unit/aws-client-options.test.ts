/**
 * The AWS clients' timeouts, deadlines and throttling retries, against real
 * sockets on loopback: a server that accepts and never answers (a stalled
 * endpoint), and one that answers as DynamoDB or EventBridge do when they
 * throttle. The SDK clients are the real ones.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { awsClientOptions } from '../../lib/aws/client-options.ts';
import { runWithDeadline } from '../../lib/deadline.ts';
import { createEventBridgePublisher } from '../../lib/events/eventbridge-publisher.ts';
import { StateTable } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';

const servers: Array<{ server: Server; sockets: Set<Socket> }> = [];
after(() => {
  for (const { server, sockets } of servers) {
    for (const s of sockets) s.destroy();
    server.close();
  }
});

async function listen(server: Server): Promise<string> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  servers.push({ server, sockets });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return `http://127.0.0.1:${address.port}`;
}

/** Accepts connections, reads whatever comes, never answers. */
async function stalledEndpoint(): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.on('data', () => {});
  });
  return { url: await listen(server), connections: () => connections };
}

/** Answers each request with what `respond` says for the nth request (1-based). */
async function scriptedEndpoint(
  respond: (n: number, req: IncomingMessage) => { status: number; body: unknown },
): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const { status, body } = respond(++requests, req);
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(body));
    });
  });
  return { url: await listen(server), requests: () => requests };
}

function tableAt(endpoint: string, options: { requestTimeoutMs?: number; maxAttempts?: number }) {
  const { doc } = createDynamoDbClient({ endpoint, region: 'local', ...options });
  return new StateTable(doc, 'svk');
}

const throttled = {
  status: 400,
  body: {
    __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message: 'The level of configured provisioned throughput for the table was exceeded.',
  },
};

describe('AWS client timeouts and deadlines', () => {
  it('a DynamoDB call on a stalled endpoint rejects with a TimeoutError after its request timeout', async () => {
    const endpoint = await stalledEndpoint();
    const table = tableAt(endpoint.url, { requestTimeoutMs: 300, maxAttempts: 1 });
    await assert.rejects(
      () => table.get({ pk: 'a', sk: 'b' }),
      (err: unknown) => err instanceof Error && err.name === 'TimeoutError',
    );
    assert.equal(endpoint.connections(), 1);
  });

  it("a DynamoDB request to a stalled endpoint through the SDK's client rejects at its timeout, not before, not much after", async () => {
    const endpoint = await stalledEndpoint();
    const { client } = createDynamoDbClient({
      endpoint: endpoint.url,
      requestTimeoutMs: 400,
      maxAttempts: 1,
    });
    const started = performance.now();
    const err = await client.send(new GetItemCommand({ TableName: 'svk', Key: { pk: { S: 'a' } } })).then(
      () => assert.fail('a stalled endpoint answered'),
      (e: unknown) => e,
    );
    const elapsed = performance.now() - started;
    client.destroy();
    assert.ok(err instanceof Error && err.name === 'TimeoutError', `a TimeoutError, not ${String(err)}`);
    // The SDK's retry middleware saw it: one attempt, as configured.
    assert.equal((err as Error & { $metadata?: { attempts?: number } }).$metadata?.attempts, 1);
    assert.ok(elapsed >= 390, `rejected after ${elapsed.toFixed(0)} ms, before its 400 ms timeout`);
    // Generous: the machine is shared; a hung request would take the test's own timeout.
    assert.ok(elapsed < 3_000, `rejected after ${elapsed.toFixed(0)} ms, long after its 400 ms timeout`);
    assert.equal(endpoint.connections(), 1);
  });

  it('a timed-out attempt is retried, up to maxAttempts', async () => {
    const endpoint = await stalledEndpoint();
    const table = tableAt(endpoint.url, { requestTimeoutMs: 200, maxAttempts: 2 });
    await assert.rejects(
      () => table.get({ pk: 'a', sk: 'b' }),
      (err: unknown) => err instanceof Error && err.name === 'TimeoutError',
    );
    assert.equal(endpoint.connections(), 2, 'two attempts, each on its own connection');
  });

  it("a call made within an invocation's deadline is aborted when the deadline passes, and not retried", async () => {
    const endpoint = await stalledEndpoint();
    // The request timeout alone would let the call run for a minute.
    const table = tableAt(endpoint.url, { requestTimeoutMs: 60_000, maxAttempts: 3 });
    await assert.rejects(
      () => runWithDeadline(AbortSignal.timeout(200), () => table.get({ pk: 'a', sk: 'b' })),
      (err: unknown) => err instanceof Error && err.name === 'AbortError',
    );
    assert.equal(endpoint.connections(), 1);
  });

  it('a deadline that already passed sends nothing', async () => {
    const endpoint = await stalledEndpoint();
    const table = tableAt(endpoint.url, { requestTimeoutMs: 60_000 });
    await assert.rejects(
      () => runWithDeadline(AbortSignal.abort(new Error('deadline')), () => table.get({ pk: 'a', sk: 'b' })),
      (err: unknown) => err instanceof Error && err.name === 'AbortError',
    );
    assert.equal(endpoint.connections(), 0);
  });

  it('outside any deadline scope, calls are bounded by the request timeout only', async () => {
    const endpoint = await stalledEndpoint();
    const table = tableAt(endpoint.url, { requestTimeoutMs: 200, maxAttempts: 1 });
    const inside = runWithDeadline(AbortSignal.timeout(60_000), () => Promise.resolve());
    await inside;
    await assert.rejects(
      () => table.get({ pk: 'a', sk: 'b' }),
      (err: unknown) => err instanceof Error && err.name === 'TimeoutError',
    );
  });
});

describe('AWS client throttling', () => {
  it('DynamoDB throttling is retried with backoff until it answers', async () => {
    const endpoint = await scriptedEndpoint((n) =>
      n <= 2 ? throttled : { status: 200, body: { Item: { pk: { S: 'a' }, sk: { S: 'b' } } } },
    );
    const table = tableAt(endpoint.url, { maxAttempts: 3 });
    assert.deepEqual(await table.get({ pk: 'a', sk: 'b' }), { pk: 'a', sk: 'b' });
    assert.equal(endpoint.requests(), 3);
  });

  it('DynamoDB throttling that does not stop fails the call after maxAttempts, with the throttling error', async () => {
    const endpoint = await scriptedEndpoint(() => throttled);
    const table = tableAt(endpoint.url, { maxAttempts: 3 });
    await assert.rejects(
      () => table.get({ pk: 'a', sk: 'b' }),
      (err: unknown) => err instanceof Error && err.name === 'ProvisionedThroughputExceededException',
    );
    assert.equal(endpoint.requests(), 3, 'bounded: no retry beyond maxAttempts');
  });

  it('EventBridge PutEvents throttling is retried by the SDK, then by the publisher, and nothing is lost', async () => {
    const endpoint = await scriptedEndpoint((n) =>
      n <= 4
        ? { status: 400, body: { __type: 'ThrottlingException', message: 'Rate exceeded' } }
        : { status: 200, body: { FailedEntryCount: 0, Entries: [{ EventId: `e${n}` }] } },
    );
    const client = new EventBridgeClient({
      endpoint: endpoint.url,
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      ...awsClientOptions({ maxAttempts: 3 }),
    });
    let accepted = 0;
    const publisher = createEventBridgePublisher({
      busName: 'pods',
      client,
      baseDelayMs: 10,
      onPublished: (count) => {
        accepted += count;
      },
    });
    await publisher.publish([
      {
        v: 1,
        type: 'ADDED',
        node: 'vk-1',
        namespace: 'default',
        name: 'p',
        uid: 'u',
        resourceVersion: '1',
      },
    ]);
    assert.equal(accepted, 1);
    assert.equal(endpoint.requests(), 5, 'three SDK attempts in the first round, two in the second');
  });

  it('EventBridge publisher without a client imports the SDK at its first PutEvents and sends it', async () => {
    const targets: Array<string | string[] | undefined> = [];
    const endpoint = await scriptedEndpoint((_n, req) => {
      targets.push(req.headers['x-amz-target']);
      return { status: 200, body: { FailedEntryCount: 0, Entries: [{ EventId: 'e1' }] } };
    });
    // A child process: the client it builds reads its credentials from its own environment.
    const script = [
      "import { createEventBridgePublisher } from './lib/events/eventbridge-publisher.ts';",
      'let accepted = 0;',
      `const publisher = createEventBridgePublisher({ busName: 'pods', region: 'local', endpoint: ${JSON.stringify(endpoint.url)}, onPublished: (count) => { accepted += count; } });`,
      "await publisher.publish([{ v: 1, type: 'ADDED', node: 'vk-1', namespace: 'default', name: 'p', uid: 'u', resourceVersion: '1' }]);",
      'process.stdout.write(String(accepted));',
    ].join('\n');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', script],
      {
        cwd: new URL('../..', import.meta.url).pathname,
        env: {
          PATH: process.env.PATH ?? '',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_CONFIG_FILE: '/nonexistent',
          AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
        },
        timeout: 60_000,
      },
    );
    assert.equal(stdout, '1', 'the one entry was accepted');
    assert.deepEqual(targets, ['AWSEvents.PutEvents']);
  });
});
