/**
 * `npm run status [-- --json]`: what the deployment described by the
 * environment is doing (the functions' own configuration, lib/config/load-config.ts):
 * nodes, locks, reconciler, known pods with their provider state, and the
 * dead-letter queue. Exits 1 when a section could not be read.
 */
import { loadDependencies } from '../lib/app/dependencies.ts';
import { ConfigError } from '../lib/config/config.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { createLogger } from '../lib/log/logger.ts';
import { collectStatus } from '../lib/status-report/collect.ts';
import { readQueueDepth } from '../lib/status-report/dlq-depth.ts';
import { renderStatus } from '../lib/status-report/render.ts';

async function main(): Promise<number> {
  const json = process.argv.includes('--json');
  const config = loadConfig(process.env);
  const deps = await loadDependencies(config, { log: createLogger({ level: 'silent' }) });
  const report = await collectStatus({
    ...deps,
    queueDepth: (url) =>
      readQueueDepth(url, { region: config.dynamodb.region, signal: AbortSignal.timeout(10_000) }),
  });
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : renderStatus(report));
  return report.errors.length > 0 ? 1 : 0;
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
