/**
 * The Kubernetes node conformance tier: Kubernetes' own [NodeConformance]
 * specs (e2e.test v1.20.2) against one virtual node with the docker
 * provider on Podman (node-under-test.ts), with parallel ginkgo nodes, a
 * JUnit report, and `N passed, M failed, K not runnable here` at the end.
 * `npm run test:k8s-conformance` (scripts/test-k8s-conformance.sh) builds
 * what it needs first; docs/k8s-conformance.md says what the figure is.
 *
 * Usage: tsx test/k8s-conformance/run.ts [options] [FOCUS]
 *   FOCUS, --focus=REGEX  only the specs whose text matches (a JavaScript regular expression)
 *   --subset              the fixed CI subset (subset.ts) instead of all
 *   --nodes=N             parallel ginkgo nodes (default 8; 4 with --subset): most specs wait on pods, few
 *                         use a core, and a refused pod keeps a spec waiting for up to 5 minutes
 *   --timeout=MINUTES     bound of the specs' run (default 60; 10 with --subset)
 *   --list                print the specs it would run, and exit
 * Exit code: 0 when every spec run passed, 1 otherwise, 2 for bad usage, 130 when interrupted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binDir } from '../../lib/local/control-plane/binaries.ts';
import { type GinkgoOutcome, runGinkgo } from './ginkgo.ts';
import { readJunitReports } from './junit.ts';
import type { NodeProcessMessage } from './node-process.ts';
import { notRunnableHere, staleEntries } from './not-runnable.ts';
import { refusedNamespaces } from './refusals.ts';
import { figure, outcomes, type SpecOutcome } from './report.ts';
import { exactFocus, listNodeConformanceSpecs } from './specs.ts';
import { SUBSET } from './subset.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const NODE_START_TIMEOUT_MS = 6 * 60_000;
const NODE_STOP_TIMEOUT_MS = 3 * 60_000;

interface Options {
  focus?: RegExp;
  subset: boolean;
  nodes: number;
  timeoutMinutes: number;
  list: boolean;
}

function say(line: string): void {
  process.stdout.write(`[k8s-conformance] ${line}\n`);
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function parseArgs(argv: readonly string[]): Options {
  let focus: RegExp | undefined;
  let subset = false;
  let nodes: number | undefined;
  let timeout: number | undefined;
  let list = false;
  const regex = (text: string) => {
    try {
      return new RegExp(text);
    } catch (err) {
      throw new UsageError(`the focus ${JSON.stringify(text)} is not a regular expression: ${String(err)}`);
    }
  };
  const whole = (flag: string, text: string) => {
    if (!/^[1-9]\d*$/.test(text))
      throw new UsageError(`${flag} must be a positive whole number, not ${text}`);
    return Number(text);
  };
  for (const arg of argv) {
    const [flag, value] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, ''];
    if (flag === '--focus') focus = regex(value);
    else if (flag === '--subset') subset = true;
    else if (flag === '--nodes') nodes = whole('--nodes', value);
    else if (flag === '--timeout') timeout = whole('--timeout', value);
    else if (flag === '--list') list = true;
    else if (!arg.startsWith('--') && focus === undefined) focus = regex(arg);
    else throw new UsageError(`unknown argument ${arg}`);
  }
  return {
    ...(focus ? { focus } : {}),
    subset,
    nodes: nodes ?? (subset ? 4 : 8),
    timeoutMinutes: timeout ?? (subset ? 10 : 60),
    list,
  };
}

interface Binaries {
  dir: string;
  e2eTest: string;
  ginkgo: string;
  kubectl: string;
  sourceTree: string;
}

/** The built binaries and the source tree; a UsageError naming what is missing. */
function binaries(): Binaries {
  const dir = binDir();
  const src = join(dir, '..', 'src');
  const tree = existsSync(src) ? readdirSync(src).find((d) => d.startsWith('kubernetes-1.20')) : undefined;
  const found = {
    dir,
    e2eTest: join(dir, 'e2e.test'),
    ginkgo: join(dir, 'ginkgo'),
    kubectl: join(dir, 'kubectl'),
    sourceTree: tree ? join(src, tree) : '',
  };
  const missing = [found.e2eTest, found.ginkgo, found.kubectl, join(dir, 'agnhost')].filter(
    (f) => !existsSync(f),
  );
  if (missing.length > 0 || !tree)
    throw new UsageError(
      `missing ${[...missing, ...(tree ? [] : [src])].join(', ')}: run scripts/ensure-k8s-conformance.sh`,
    );
  return found;
}

/** The selected specs: all, the subset (each of whose names must exist), or those matching the focus. */
function select(all: readonly string[], options: Options): string[] {
  let chosen = [...all];
  if (options.subset) {
    const unknown = SUBSET.filter((name) => !all.includes(name));
    if (unknown.length > 0)
      throw new UsageError(`subset.ts names specs e2e.test does not have:\n  ${unknown.join('\n  ')}`);
    chosen = [...SUBSET];
  }
  const focus = options.focus;
  return focus ? chosen.filter((name) => focus.test(name)) : chosen;
}

/** Starts node-process.ts and resolves with its kubeconfig once the node is Ready. */
async function startNode(
  dir: string,
  bins: Binaries,
  logFile: string,
): Promise<{ child: ChildProcess; adminKubeconfig: string }> {
  const out = openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'test/k8s-conformance/node-process.ts'), dir, bins.dir, bins.sourceTree],
    { cwd: root, stdio: ['ignore', out, out, 'ipc'] },
  );
  closeSync(out);
  const message = await new Promise<NodeProcessMessage>((resolve) => {
    const timer = setTimeout(
      () => resolve({ kind: 'failed', message: `not Ready after ${NODE_START_TIMEOUT_MS / 60_000} minutes` }),
      NODE_START_TIMEOUT_MS,
    );
    child.once('message', (m: NodeProcessMessage) => {
      clearTimeout(timer);
      resolve(m);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ kind: 'failed', message: `exited with ${code} before the node was Ready` });
    });
  });
  if (message.kind === 'failed') {
    await stopNode(child);
    throw new Error(`the node under test did not start: ${message.message} (see ${relative(root, logFile)})`);
  }
  return { child, adminKubeconfig: message.adminKubeconfig };
}

async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), NODE_STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

function e2eFlags(adminKubeconfig: string, bins: Binaries, reportDir: string, outputDir: string): string[] {
  return [
    `--kubeconfig=${adminKubeconfig}`,
    // No cloud: the framework's provider-neutral behaviour.
    '--provider=skeleton',
    `--report-dir=${reportDir}`,
    `--e2e-output-dir=${outputDir}`,
    // The v1.20.2 kubectl built beside the control plane, never one on PATH (outside the version skew).
    `--kubectl-path=${bins.kubectl}`,
    `--repo-root=${bins.sourceTree}`,
    // The suite's preconditions: the one node Ready and schedulable (no node may be NotReady), and
    // kube-system holds no pods here (no DNS, no kube-proxy), so none are waited for; a broken node
    // fails the suite within minutes instead of the defaults' 30.
    '--allowed-not-ready-nodes=0',
    '--minStartupPods=0',
    '--node-schedulable-timeout=2m',
    '--system-pods-startup-timeout=1m',
    '--system-daemonsets-startup-timeout=1m',
    // Containers run on Debian's Podman: the [LinuxOnly] specs apply.
    '--node-os-distro=debian',
    // The failed spec's namespace (its events: the provider's refusals) goes into its report, and
    // every spec's log (its namespace: a pass over a refused pod is not counted, refusals.ts).
    '--dump-logs-on-failure=true',
    '--ginkgo.reportPassed',
    // No cluster log dump: it would reach for nodes over SSH.
    '--disable-log-dump=true',
  ];
}

interface Selection {
  all: readonly string[];
  run: string[];
  notRunnable: Map<string, string>;
}

/** The specs e2e.test has, those the options select, and which of them cannot run here. */
function selection(e2eTest: string, options: Options): Selection {
  const all = listNodeConformanceSpecs(e2eTest);
  const stale = staleEntries(all);
  if (stale.length > 0)
    throw new Error(`not-runnable.ts names specs e2e.test does not have:\n  ${stale.join('\n  ')}`);
  const selected = select(all, options);
  const notRunnable = new Map(
    selected.flatMap((name) => {
      const why = notRunnableHere(name);
      return why ? [[name, why] as const] : [];
    }),
  );
  return { all, run: selected.filter((name) => !notRunnable.has(name)), notRunnable };
}

interface RunDirs {
  runDir: string;
  reportDir: string;
}

/** Starts the node, runs the specs under ginkgo, stops the node (also when interrupted). */
async function runSpecs(
  run: readonly string[],
  options: Options,
  bins: Binaries,
  dirs: RunDirs,
  streamed: Map<string, 'passed' | 'failed'>,
  signal: AbortSignal,
): Promise<GinkgoOutcome> {
  const { runDir, reportDir } = dirs;
  say(
    `starting the control plane, DynamoDB Local, Podman and the virtual node (log: ${relative(root, join(reportDir, 'node.log'))})`,
  );
  const node = await startNode(join(runDir, 'node'), bins, join(reportDir, 'node.log'));
  try {
    if (signal.aborted) return { exitCode: null, timedOut: false, interrupted: true };
    say(
      `running ${run.length} specs on ${options.nodes} ginkgo nodes, for at most ${options.timeoutMinutes} minutes (log: ${relative(root, join(reportDir, 'ginkgo.log'))})`,
    );
    const started = Date.now();
    const outcome = await runGinkgo({
      ginkgo: bins.ginkgo,
      e2eTest: bins.e2eTest,
      nodes: options.nodes,
      focus: exactFocus(run),
      e2eFlags: e2eFlags(node.adminKubeconfig, bins, reportDir, join(runDir, 'e2e-output')),
      logFile: join(reportDir, 'ginkgo.log'),
      env: {
        ...process.env,
        PATH: `${bins.dir}:${process.env.PATH ?? ''}`,
        KUBECONFIG: node.adminKubeconfig,
      },
      deadline: started + options.timeoutMinutes * 60_000,
      signal,
      onSpec: (state, name) => {
        streamed.set(name, state);
        say(`${state === 'passed' ? 'passed' : 'FAILED'} (${streamed.size}/${run.length}) ${name}`);
      },
    });
    say(`specs ran for ${((Date.now() - started) / 60_000).toFixed(1)} minutes`);
    return outcome;
  } finally {
    say('stopping the virtual node, Podman, DynamoDB Local and the control plane');
    await stopNode(node.child);
  }
}

function unfinishedCause(outcome: GinkgoOutcome, options: Options): string {
  if (outcome.interrupted) return 'the run was interrupted';
  if (outcome.timedOut) return `the run's ${options.timeoutMinutes}-minute bound was reached`;
  return `ginkgo exited with ${outcome.exitCode} without running it (see ginkgo.log)`;
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const bins = binaries();
  const { all, run, notRunnable } = selection(bins.e2eTest, options);
  say(
    `${run.length + notRunnable.size} of ${all.length} [NodeConformance] specs selected: ${run.length} to run, ${notRunnable.size} not runnable here`,
  );
  if (options.list) {
    for (const name of run) say(`  run           ${name}`);
    for (const [name, why] of notRunnable) say(`  not runnable  ${name} (${why})`);
    return 0;
  }
  const runDir = join(root, '.local', `k8s-conformance-${process.pid}`);
  const reportDir = join(runDir, 'report');
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(reportDir, { recursive: true });
  const abort = new AbortController();
  process.on('SIGINT', () => abort.abort());
  process.on('SIGTERM', () => abort.abort());
  const streamed = new Map<string, 'passed' | 'failed'>();
  const outcome: GinkgoOutcome =
    run.length > 0
      ? await runSpecs(run, options, bins, { runDir, reportDir }, streamed, abort.signal)
      : { exitCode: 0, timedOut: false, interrupted: false };
  const list = outcomes({
    run,
    notRunnable,
    results: readJunitReports(reportDir),
    streamed,
    unfinished: unfinishedCause(outcome, options),
    refused: refusedNamespaces(join(reportDir, 'node.log')),
  });
  const lines = summaryLines(list);
  writeFileSync(join(reportDir, 'summary.txt'), `${lines.join('\n')}\n`);
  // Every spec's verdict and cause, for tools (the docs' table is kept from it).
  writeFileSync(join(reportDir, 'outcomes.json'), `${JSON.stringify(list, null, 2)}\n`);
  say(`JUnit reports and logs: ${relative(root, reportDir)}`);
  // The figure last, alone on its line.
  for (const line of lines) process.stdout.write(`${line}\n`);
  rmSync(join(runDir, 'node'), { recursive: true, force: true });
  rmSync(join(runDir, 'e2e-output'), { recursive: true, force: true });
  if (outcome.interrupted) return 130;
  return list.some((o) => o.verdict === 'failed') ? 1 : 0;
}

function summaryLines(list: readonly SpecOutcome[]): string[] {
  const lines: string[] = [];
  const failed = list.filter((o) => o.verdict === 'failed');
  const notRunnable = list.filter((o) => o.verdict === 'not runnable here');
  if (failed.length > 0)
    lines.push('', `Failed (${failed.length}):`, ...failed.map((o) => `  ${o.name}\n      ${o.cause}`));
  if (notRunnable.length > 0)
    lines.push(
      '',
      `Not runnable here (${notRunnable.length}):`,
      ...notRunnable.map((o) => `  ${o.name}\n      ${o.cause}`),
    );
  lines.push('', figure(list));
  return lines;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`[k8s-conformance] ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(
      `[k8s-conformance] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
