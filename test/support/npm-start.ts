import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

import { type ToolingClients, toolingContext } from '../../lib/kube/tooling-clients.ts';
import { clusterServingDir } from '../../lib/local/kubelet-api/joined-cluster.ts';
import type { TestEnv } from './env.ts';
import { readNode, readyStatus, waitFor } from './kube.ts';

const root = new URL('../..', import.meta.url).pathname;

/** `npm start` (scripts/start.ts) running as a user runs it, in its own process group. */
export interface NpmStart {
  child: ChildProcessByStdio<null, Readable, Readable>;
  stdout: string[];
  /** Its `[start]` progress lines, and anything else on stderr. */
  stderr: string[];
  exited: Promise<number | null>;
}

/**
 * Starts scripts/start.ts with `env` over this process's environment less
 * every SVK_, DOCKER_ and KUBECONFIG variable, so that only what the test
 * names reaches it.
 */
export function npmStart(env: Record<string, string>): NpmStart {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(SVK_|DOCKER_|KUBECONFIG$)/.test(k)),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, ...env },
  });
  const started: NpmStart = {
    child,
    stdout: [],
    stderr: [],
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  const collect = (into: string[]) => {
    let partial = '';
    return (d: Buffer) => {
      const parts = (partial + d.toString()).split('\n');
      partial = parts.pop() ?? '';
      into.push(...parts);
    };
  };
  child.stdout.on('data', collect(started.stdout));
  child.stderr.on('data', collect(started.stderr));
  return started;
}

/**
 * `npm start` as a user runs it against the run's control plane and DynamoDB
 * Local: the cluster-admin kubeconfig as the current kubeconfig, the
 * functions as the virtual kubelet (as everywhere in the suite), `table`
 * and `node` its own, and `env` beside (a provider, a log level).
 */
export function npmStartOnTestCluster(
  testEnv: TestEnv,
  options: { table: string; node: string; env?: Record<string, string> },
): NpmStart {
  return npmStart({
    KUBECONFIG: testEnv.kube.adminKubeconfig,
    SVK_KUBECONFIG: testEnv.kube.kubeletKubeconfig,
    SVK_DYNAMODB_ENDPOINT: testEnv.dynamodb.endpoint,
    AWS_REGION: testEnv.dynamodb.region,
    SVK_TABLE_NAME: options.table,
    SVK_NODE_NAMES: options.node,
    ...options.env,
  });
}

/** Waits for `node` to be Ready, saying what npm start printed when it is not. */
export async function npmStartNodeReady(
  admin: ToolingClients,
  started: NpmStart,
  node: string,
  timeoutMs = 90_000,
): Promise<void> {
  await waitFor(async () => readyStatus(await readNode(admin, node)) === 'True', {
    timeoutMs,
    what: `${node} Ready; npm start said:\n${started.stderr.join('\n')}`,
  });
}

/** Kills whatever is left of `started`'s process group (a failed test's after hook). */
export function killNpmStart(started: NpmStart | undefined): void {
  const pid = started?.child.pid;
  if (pid && groupAlive(pid)) process.kill(-pid, 'SIGKILL');
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGINT, as Ctrl-C; resolves with the exit code once no process of its group is left (SIGKILL after 60 s). */
export async function stopNpmStart(started: NpmStart): Promise<number | null | 'hung'> {
  const pid = started.child.pid ?? 0;
  if (!groupAlive(pid)) return started.exited;
  process.kill(pid, 'SIGINT');
  const code = await Promise.race([
    started.exited,
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000).unref()),
  ]);
  if (code === 'hung') process.kill(-pid, 'SIGKILL');
  await waitFor(() => !groupAlive(pid), { timeoutMs: 15_000, what: 'no process of npm start left' });
  return code;
}

/** The first `[start]` line that matches `pattern`, once printed. */
export function startLine(started: NpmStart, pattern: RegExp, timeoutMs = 90_000): Promise<string> {
  return waitFor(() => started.stderr.find((l) => pattern.test(l)), {
    timeoutMs,
    what: `npm start to print ${pattern}; it said:\n${started.stderr.join('\n')}`,
  });
}

/** Where npm start keeps serving certificates (scripts/start.ts's `.local/start/kubelet-api`). */
export const KEPT_SERVING_DIR = join(root, '.local/start/kubelet-api');

/**
 * Removes the serving certificate npm start kept for `node` on the cluster of
 * `kubeconfig` (a test cluster is thrown away after the run), and the
 * cluster's directory once empty.
 */
export function forgetKeptServing(kubeconfig: string, node: string): void {
  const { server, ca } = toolingContext(kubeconfig);
  const dir = clusterServingDir(KEPT_SERVING_DIR, server, ca);
  for (const file of [`${node}.crt`, `${node}.key`]) rmSync(join(dir, file), { force: true });
  try {
    rmdirSync(dir);
  } catch {
    // Another test's certificate is still there, or nothing was kept.
  }
}
