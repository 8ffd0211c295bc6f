/**
 * `npm run status [-- --json]`: what the deployment described by the
 * environment is doing (the functions' own configuration, lib/config/load-config.ts):
 * nodes, locks, reconciler, known pods with their provider state, and the
 * dead-letter queue. Exits 1 when a section could not be read.
 */
import { loadDependencies } from '../lib/app/dependencies.ts';
import { ConfigError } from '../lib/config/config.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { oldestMessageAgeSeconds } from '../lib/dead-letters/oldest-age.ts';
import type { QueueDepth } from '../lib/dead-letters/queue.ts';
import { queueNameOf, SqsDeadLetterQueue } from '../lib/dead-letters/sqs-queue.ts';
import { createLogger } from '../lib/log/logger.ts';
import { collectStatus } from '../lib/status-report/collect.ts';
import { renderStatus } from '../lib/status-report/render.ts';

async function main(): Promise<number> {
  const json = process.argv.includes('--json');
  const config = loadConfig(process.env);
  const deps = await loadDependencies(config, { log: createLogger({ level: 'silent' }) });
  const report = await collectStatus({
    ...deps,
    queueDepth: (url) => readQueueDepth(url, config.dynamodb.region),
  });
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
  return report.errors.length > 0 ? 1 : 0;
}

/** Depth from SQS, the oldest message's age from CloudWatch (left out when CloudWatch cannot say). */
async function readQueueDepth(url: string, region: string): Promise<QueueDepth> {
  const signal = AbortSignal.timeout(10_000);
  const queue = SqsDeadLetterQueue.create(url, { region });
  try {
    const [depth, age] = await Promise.all([
      queue.depth(signal),
      oldestMessageAgeSeconds(queueNameOf(url), { region, now: Date.now(), signal }).catch(() => undefined),
    ]);
    return age === undefined ? depth : { ...depth, oldestAgeSeconds: age };
  } finally {
    queue.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `${err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(2);
  },
);
