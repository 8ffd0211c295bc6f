/**
 * The tick's SQS adapter (lib/tick/sqs-tick-queue.ts), its SQS client built
 * with awsClientOptions, against a loopback server that answers as SQS's
 * JSON protocol does: it sends what a plain @aws-sdk/client-sqs client sends
 * for the same call (the same target, content type and body, to the queue
 * URL's host), turns the SDK's MD5 check into our InvalidChecksumError,
 * reads the queue's depth, signs with the credentials it is given, and an
 * aborted call sends nothing.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { createSqsTickQueue, InvalidChecksumError } from '../../lib/tick/sqs-tick-queue.ts';
import { deduplicationId, TICK_MESSAGE_GROUP } from '../../lib/tick/tick-slot.ts';

interface Seen {
  target: string | undefined;
  contentType: string | undefined;
  authorization: string | undefined;
  path: string | undefined;
  body: Record<string, unknown>;
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

const servers: ReturnType<typeof createServer>[] = [];
after(() => {
  for (const server of servers) server.close();
});

/** SQS for SendMessage and GetQueueAttributes; `corrupt` answers SendMessage with a wrong MD5. */
async function fakeSqs(options: { depth?: number; corrupt?: boolean } = {}) {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      const target = req.headers['x-amz-target'];
      seen.push({
        target: typeof target === 'string' ? target : undefined,
        contentType: req.headers['content-type'],
        authorization: req.headers.authorization,
        path: req.url,
        body,
      });
      const answer =
        target === 'AmazonSQS.SendMessage'
          ? {
              MessageId: 'm-1',
              MD5OfMessageBody: options.corrupt ? md5('other') : md5(String(body.MessageBody)),
            }
          : {
              Attributes: {
                ApproximateNumberOfMessages: String(options.depth ?? 0),
                ApproximateNumberOfMessagesNotVisible: '0',
                ApproximateNumberOfMessagesDelayed: '0',
              },
            };
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(answer));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return { queueUrl: `http://127.0.0.1:${address.port}/000000000000/svk-tick.fifo`, seen };
}

const credentials = { accessKeyId: 'AKIDTICK', secretAccessKey: 'secret' };

describe('the tick queue on SQS', () => {
  it('sends the message the SDK client sends, to the queue URL, signed for sqs', async () => {
    const sqs = await fakeSqs();
    const queue = createSqsTickQueue({ queueUrl: sqs.queueUrl, region: 'eu-west-1', credentials });
    await queue.send({ slot: 42, sender: 'next', group: TICK_MESSAGE_GROUP });
    const sdk = new SQSClient({ region: 'eu-west-1', credentials, maxAttempts: 1 });
    await sdk.send(
      new SendMessageCommand({
        QueueUrl: sqs.queueUrl,
        MessageBody: JSON.stringify({ v: 1, slot: 42 }),
        MessageGroupId: TICK_MESSAGE_GROUP,
        MessageDeduplicationId: deduplicationId(42, 'next'),
      }),
    );
    sdk.destroy();
    const [ours, theirs] = sqs.seen;
    assert.ok(ours && theirs);
    assert.equal(ours.target, 'AmazonSQS.SendMessage');
    assert.equal(ours.target, theirs.target);
    assert.equal(ours.contentType, theirs.contentType);
    assert.equal(ours.path, theirs.path);
    assert.deepEqual(ours.body, theirs.body);
    assert.match(
      ours.authorization ?? '',
      /^AWS4-HMAC-SHA256 Credential=AKIDTICK\/\d{8}\/eu-west-1\/sqs\/aws4_request/,
    );
  });

  it('refuses an answer whose MD5 is not that of the body it sent', async () => {
    const sqs = await fakeSqs({ corrupt: true });
    const queue = createSqsTickQueue({ queueUrl: sqs.queueUrl, region: 'eu-west-1', credentials });
    await assert.rejects(
      queue.send({ slot: 1, sender: 'restart', group: TICK_MESSAGE_GROUP }),
      InvalidChecksumError,
    );
  });

  it("reads the queue's depth: empty only when no message waits, is delayed or in flight", async () => {
    const empty = await fakeSqs({ depth: 0 });
    const busy = await fakeSqs({ depth: 1 });
    assert.equal(
      await createSqsTickQueue({ queueUrl: empty.queueUrl, region: 'r', credentials }).isEmpty(),
      true,
    );
    assert.equal(
      await createSqsTickQueue({ queueUrl: busy.queueUrl, region: 'r', credentials }).isEmpty(),
      false,
    );
    assert.deepEqual(empty.seen[0]?.body, {
      QueueUrl: empty.queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    });
  });

  it("an aborted call sends nothing and fails as an AbortError, whatever the caller's reason", async () => {
    const sqs = await fakeSqs();
    const queue = createSqsTickQueue({ queueUrl: sqs.queueUrl, region: 'r', credentials });
    await assert.rejects(queue.isEmpty(AbortSignal.abort(new Error('tick over'))), { name: 'AbortError' });
    assert.equal(sqs.seen.length, 0);
  });
});
