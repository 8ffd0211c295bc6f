/**
 * The age of the oldest message in a queue: SQS answers this only as the
 * CloudWatch metric ApproximateAgeOfOldestMessage (queue attributes have
 * depths, not ages). The only module that imports the CloudWatch SDK; used by
 * `npm run status` (needs cloudwatch:GetMetricData).
 */
import { CloudWatchClient, GetMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { awsClientOptions } from '../aws/client-options.ts';

/** SQS publishes its metrics every minute; look back far enough to find the latest one. */
const LOOKBACK_MS = 15 * 60_000;

/**
 * The latest ApproximateAgeOfOldestMessage of the queue in seconds, or
 * undefined when CloudWatch has no recent datapoint (an idle queue's metrics
 * stop after a few hours; an empty queue reports 0).
 */
export async function oldestMessageAgeSeconds(
  queueName: string,
  options: { region: string; now: number; signal?: AbortSignal; client?: CloudWatchClient },
): Promise<number | undefined> {
  const client = options.client ?? new CloudWatchClient({ region: options.region, ...awsClientOptions() });
  try {
    const out = await client.send(
      new GetMetricDataCommand({
        StartTime: new Date(options.now - LOOKBACK_MS),
        EndTime: new Date(options.now),
        ScanBy: 'TimestampDescending',
        MetricDataQueries: [
          {
            Id: 'oldest',
            MetricStat: {
              Metric: {
                Namespace: 'AWS/SQS',
                MetricName: 'ApproximateAgeOfOldestMessage',
                Dimensions: [{ Name: 'QueueName', Value: queueName }],
              },
              Period: 60,
              Stat: 'Maximum',
            },
          },
        ],
      }),
      options.signal ? { abortSignal: options.signal } : {},
    );
    return out.MetricDataResults?.[0]?.Values?.[0];
  } finally {
    if (!options.client) client.destroy();
  }
}
