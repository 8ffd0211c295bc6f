/**
 * The oldest dead letter's age, from CloudWatch: the real CloudWatchClient
 * with only its transport replaced (no CloudWatch can run here).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { oldestMessageAgeSeconds } from '../../lib/dead-letters/oldest-age.ts';
import { queueNameOf } from '../../lib/dead-letters/sqs-queue.ts';

function cloudWatch(answer: unknown) {
  const requests: Array<{ target: string; body: Record<string, unknown> }> = [];
  const client = new CloudWatchClient({
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: { headers: Record<string, string>; body?: unknown }) => {
        const raw = request.body;
        const text = raw instanceof Uint8Array ? Buffer.from(raw).toString('utf8') : String(raw ?? '{}');
        requests.push({ target: request.headers['x-amz-target'] ?? '', body: JSON.parse(text) });
        return {
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Buffer.from(JSON.stringify(answer)),
          },
        };
      },
    },
  });
  return { client, requests };
}

describe('oldest dead letter age', () => {
  it("reads the queue's latest ApproximateAgeOfOldestMessage", async () => {
    const cw = cloudWatch({
      MetricDataResults: [
        { Id: 'oldest', StatusCode: 'Complete', Timestamps: [1_795_000_000], Values: [125] },
      ],
    });
    const age = await oldestMessageAgeSeconds('svk-prod-dlq', {
      region: 'local',
      now: Date.now(),
      client: cw.client,
    });
    assert.equal(age, 125);
    const query = JSON.stringify(cw.requests[0]?.body);
    assert.match(cw.requests[0]?.target ?? '', /GetMetricData$/);
    assert.match(query, /ApproximateAgeOfOldestMessage/);
    assert.match(query, /"Name":"QueueName","Value":"svk-prod-dlq"/);
  });

  it('is unknown when CloudWatch has no datapoint', async () => {
    const cw = cloudWatch({
      MetricDataResults: [{ Id: 'oldest', StatusCode: 'Complete', Timestamps: [], Values: [] }],
    });
    assert.equal(
      await oldestMessageAgeSeconds('q', { region: 'local', now: Date.now(), client: cw.client }),
      undefined,
    );
  });

  it("a queue's name is the last segment of its URL", () => {
    assert.equal(
      queueNameOf('https://sqs.eu-west-1.amazonaws.com/123456789012/svk-prod-PodSyncDLQ-abc'),
      'svk-prod-PodSyncDLQ-abc',
    );
  });
});
