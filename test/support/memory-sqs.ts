/**
 * SQS's wire protocol (AWS JSON 1.0, the one @aws-sdk/client-sqs speaks)
 * over one in-memory queue, as the request handler of a real SQSClient: the
 * client (its serializers, MD5 checks, retries) is the real one and only its
 * transport is replaced, because no SQS can run here. Implements what the
 * dead-letter commands use: SendMessage, ReceiveMessage (visibility timeout,
 * SentTimestamp), DeleteMessageBatch, GetQueueAttributes.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SQSClient } from '@aws-sdk/client-sqs';

interface Stored {
  id: string;
  body: string;
  sentAt: number;
  visibleAt: number;
  receipt?: string;
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

export class MemorySqs {
  readonly url = 'https://sqs.local.amazonaws.com/000000000000/pod-sync-dlq';
  readonly messages: Stored[] = [];
  /** Milliseconds; advance it to let visibility timeouts run out. */
  now = Date.now();
  /** Requests by action, e.g. `ReceiveMessage`. */
  readonly calls: string[] = [];

  /** A real SQSClient whose transport is this queue. */
  client(): SQSClient {
    return new SQSClient({
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
      requestHandler: {
        handle: (request: { headers: Record<string, string>; body?: unknown }) => this.#handle(request),
      },
    });
  }

  async #handle(request: { headers: Record<string, string>; body?: unknown }) {
    const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
    const action = target.replace(/^AmazonSQS\./, '');
    this.calls.push(action);
    const raw = request.body;
    // The client hands its JSON over as a string or as bytes.
    const text = raw instanceof Uint8Array ? Buffer.from(raw).toString('utf8') : String(raw ?? '{}');
    const input: Record<string, unknown> = JSON.parse(text);
    const answer = (statusCode: number, body: unknown) => ({
      response: {
        statusCode,
        headers: { 'content-type': 'application/x-amz-json-1.0' },
        body: Buffer.from(JSON.stringify(body)),
      },
    });
    switch (action) {
      case 'SendMessage': {
        const body = String(input.MessageBody);
        const id = randomUUID();
        this.messages.push({ id, body, sentAt: this.now, visibleAt: this.now });
        return answer(200, { MessageId: id, MD5OfMessageBody: md5(body) });
      }
      case 'ReceiveMessage': {
        const max = Number(input.MaxNumberOfMessages ?? 1);
        const visibility = Number(input.VisibilityTimeout ?? 30);
        const visible = this.messages.filter((m) => m.visibleAt <= this.now).slice(0, max);
        for (const m of visible) {
          m.visibleAt = this.now + visibility * 1_000;
          m.receipt = randomUUID();
        }
        return answer(200, {
          Messages: visible.map((m) => ({
            MessageId: m.id,
            ReceiptHandle: m.receipt,
            MD5OfBody: md5(m.body),
            Body: m.body,
            Attributes: { SentTimestamp: String(m.sentAt) },
          })),
        });
      }
      case 'DeleteMessageBatch': {
        const entries = (input.Entries ?? []) as Array<{ Id: string; ReceiptHandle: string }>;
        const Successful: Array<{ Id: string }> = [];
        const Failed: Array<{ Id: string; Code: string; SenderFault: boolean; Message: string }> = [];
        for (const e of entries) {
          const i = this.messages.findIndex((m) => m.receipt === e.ReceiptHandle);
          if (i < 0) {
            Failed.push({ Id: e.Id, Code: 'ReceiptHandleIsInvalid', SenderFault: true, Message: 'stale' });
            continue;
          }
          this.messages.splice(i, 1);
          Successful.push({ Id: e.Id });
        }
        return answer(200, { Successful, Failed });
      }
      case 'GetQueueAttributes': {
        const visible = this.messages.filter((m) => m.visibleAt <= this.now).length;
        return answer(200, {
          Attributes: {
            ApproximateNumberOfMessages: String(visible),
            ApproximateNumberOfMessagesNotVisible: String(this.messages.length - visible),
          },
        });
      }
      default:
        return answer(400, {
          __type: 'com.amazonaws.sqs#InvalidAction',
          message: `${action} not implemented`,
        });
    }
  }
}
