/**
 * The node under test in a process of its own, so that the functions' JSON
 * log lines (on this process's stdout) go to a file of the run and not into
 * the tier's report. Started by run.ts with an IPC channel: it sends
 * `{ ready, adminKubeconfig, node }` or `{ failed, message }`, and stops
 * everything it started on SIGTERM, SIGINT or when the channel closes (the
 * runner died), then exits.
 *
 * Arguments: <run directory> <binaries directory> <kubernetes source tree>
 */
import { type NodeUnderTest, startNodeUnderTest } from './node-under-test.ts';

export type NodeProcessMessage =
  | { kind: 'ready'; adminKubeconfig: string; node: string }
  | { kind: 'failed'; message: string };

function send(message: NodeProcessMessage): void {
  process.send?.(message);
}

function log(line: string): void {
  process.stderr.write(`[node] ${line}\n`);
}

async function main(): Promise<void> {
  const [dir, binDir, sourceTree] = process.argv.slice(2);
  if (!dir || !binDir || !sourceTree) throw new Error('usage: node-process.ts <dir> <binDir> <sourceTree>');
  let node: NodeUnderTest | undefined;
  let starting = true;
  let stopRequested = false;
  // A stop asked for while starting waits for the start to end (it stops what it started when it fails).
  const shutdown = async () => {
    if (stopRequested) return;
    stopRequested = true;
    if (starting) return;
    log('stopping');
    await node?.stop();
    log('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  process.on('disconnect', () => void shutdown());
  try {
    node = await startNodeUnderTest({ dir, images: { binDir, sourceTree }, log });
  } catch (err) {
    const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
    log(message);
    send({ kind: 'failed', message: message.split('\n')[0] ?? message });
    process.exit(1);
  }
  starting = false;
  if (stopRequested) {
    stopRequested = false;
    await shutdown();
    return;
  }
  send({ kind: 'ready', adminKubeconfig: node.adminKubeconfig, node: node.node });
}

await main();
