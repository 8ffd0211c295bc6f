/**
 * `npm run redrive [-- --dry-run] [--max N]`: publishes the pod events in
 * pod-sync's dead-letter queue (SVK_DLQ_URL) to the pod event bus
 * (SVK_EVENT_BUS_NAME) again, and deletes each message once the bus accepted
 * its event (lib/dead-letters/redrive.ts). Safe to run twice. Messages that
 * hold no pod event stay in the queue and are listed. Exits 0 when every pod
 * event was redriven, 1 when some could not be published (they stay queued),
 * 2 on bad configuration.
 */
import { loadConfig } from '../lib/config/load-config.ts';
import { redriveDeadLetters } from '../lib/dead-letters/redrive.ts';
import { SqsDeadLetterQueue } from '../lib/dead-letters/sqs-queue.ts';
import { createEventBridgePublisher } from '../lib/events/eventbridge-publisher.ts';
import { createLogger } from '../lib/log/logger.ts';

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function options(argv: string[]): { dryRun: boolean; maxMessages?: number } {
  const dryRun = argv.includes('--dry-run');
  const at = argv.indexOf('--max');
  if (at < 0) return { dryRun };
  const max = Number(argv[at + 1]);
  if (!Number.isInteger(max) || max < 1) throw new UsageError('--max: a positive whole number of messages');
  return { dryRun, maxMessages: max };
}

async function main(): Promise<number> {
  const { dryRun, maxMessages } = options(process.argv.slice(2));
  const config = loadConfig(process.env);
  const url = config.events.deadLetterQueueUrl;
  if (!url)
    throw new UsageError("SVK_DLQ_URL is not set: the URL of the deployment's pod-sync dead-letter queue");
  const region = config.dynamodb.region;
  const log = createLogger({ level: config.logLevel });
  const queue = SqsDeadLetterQueue.create(url, { region });
  const publisher = createEventBridgePublisher({ busName: config.events.busName, region });
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort(new Error('interrupted')));
  try {
    const r = await redriveDeadLetters({
      queue,
      publisher,
      log,
      dryRun,
      signal: stop.signal,
      ...(maxMessages !== undefined ? { maxMessages } : {}),
    });
    const lines = [
      `received ${r.received} message(s) from ${url}`,
      dryRun
        ? `${r.wouldRedrive} pod event(s) would be published to ${config.events.busName} (dry run: nothing changed)`
        : `${r.redriven} pod event(s) published to ${config.events.busName} and deleted ` +
          `(${r.byShape.event} raw events, ${r.byShape['invocation-record']} pod-sync invocation records)`,
      ...(r.notDeleted > 0 ? [`${r.notDeleted} published but not deleted: they come back, run again`] : []),
      ...(r.notPublished > 0 ? [`${r.notPublished} not accepted by the bus: left in the queue`] : []),
      ...r.kept.map((k) => `kept ${k.id}: ${k.error}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return r.notPublished > 0 ? 1 : 0;
  } finally {
    queue.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const usage = err instanceof UsageError || (err instanceof Error && err.name === 'ConfigError');
    process.stderr.write(
      `${err instanceof Error ? (usage ? err.message : (err.stack ?? err.message)) : String(err)}\n`,
    );
    process.exit(usage ? 2 : 1);
  },
);
