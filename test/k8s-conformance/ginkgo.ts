/**
 * Runs e2e.test under the ginkgo CLI with parallel nodes, in a process group
 * of its own so that a deadline or an interrupt reaches every node: SIGINT
 * first (each node then runs its AfterSuite and writes its JUnit report),
 * SIGKILL to the group if it has not exited after a grace period. Each spec
 * that ends is passed to `onSpec` as it happens, from e2e.test's progress
 * reporter (`--progress-report-url`, which each node POSTs to).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer, type Server } from 'node:http';

const INTERRUPT_GRACE_MS = 90_000;

export interface GinkgoOptions {
  ginkgo: string;
  e2eTest: string;
  nodes: number;
  /** Go regular expression of the specs to run (ginkgo's -focus). */
  focus: string;
  /** e2e.test's own flags; --progress-report-url is added. */
  e2eFlags: string[];
  /** ginkgo's and e2e.test's output. */
  logFile: string;
  env: NodeJS.ProcessEnv;
  /** The run is interrupted at this time (epoch ms). */
  deadline: number;
  /** Aborting interrupts the run as the deadline does (Ctrl-C). */
  signal: AbortSignal;
  onSpec: (state: 'passed' | 'failed', name: string) => void;
}

export interface GinkgoOutcome {
  exitCode: number | null;
  /** Cut by the deadline. */
  timedOut: boolean;
  /** Cut by the abort signal. */
  interrupted: boolean;
}

export async function runGinkgo(options: GinkgoOptions): Promise<GinkgoOutcome> {
  const progress = await progressServer(options.onSpec);
  const out = openSync(options.logFile, 'a');
  const args = [
    `-nodes=${options.nodes}`,
    '-noColor',
    `-focus=${options.focus}`,
    options.e2eTest,
    '--',
    ...options.e2eFlags,
    `--progress-report-url=${progress.url}`,
  ];
  const child = spawn(options.ginkgo, args, {
    detached: true,
    stdio: ['ignore', out, out],
    env: options.env,
  });
  closeSync(out);
  let timedOut = false;
  let interrupted = false;
  let killTimer: NodeJS.Timeout | undefined;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      // The group has exited.
    }
  };
  const interrupt = () => {
    if (killTimer) return;
    signalGroup('SIGINT');
    killTimer = setTimeout(() => signalGroup('SIGKILL'), INTERRUPT_GRACE_MS);
  };
  const deadlineTimer = setTimeout(
    () => {
      timedOut = true;
      interrupt();
    },
    Math.max(0, options.deadline - Date.now()),
  );
  const onAbort = () => {
    interrupted = true;
    interrupt();
  };
  options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.signal.aborted) onAbort();
  const exitCode = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  clearTimeout(deadlineTimer);
  clearTimeout(killTimer);
  options.signal.removeEventListener('abort', onAbort);
  // Nodes that outlived the CLI (it exits first on a hard interrupt).
  signalGroup('SIGKILL');
  await progress.close();
  return { exitCode, timedOut, interrupted };
}

/** Receives e2e.test's progress JSON (`{"msg": "PASSED <spec>" | "FAILED <spec>", ...}`). */
async function progressServer(
  onSpec: GinkgoOptions['onSpec'],
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(204).end();
      const msg = progressMessage(Buffer.concat(chunks).toString('utf8'));
      const match = msg ? /^(PASSED|FAILED) (.*)$/s.exec(msg) : null;
      if (match?.[1] && match[2]) onSpec(match[1] === 'PASSED' ? 'passed' : 'failed', match[2]);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('progress server has no port');
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function progressMessage(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && 'msg' in parsed && typeof parsed.msg === 'string')
      return parsed.msg;
  } catch {
    // Not JSON: ignored.
  }
  return undefined;
}
