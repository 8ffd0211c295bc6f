/**
 * Cold start of each packaged function: its zip's unzipped size, and in fresh
 * Node 22 processes (as a new Lambda sandbox starts one) the time to import
 * the handler and, on its first invocation, to the first request it sends.
 *
 * Usage: npx tsx bench/cold-start.ts [--package <dir>] [--runs 15] [--source-maps both|on|off]
 *   [--only tick,heartbeat] [--cpu-prof <dir>]
 *
 * `--cpu-prof <dir>` runs the children with `node --cpu-prof` writing into
 * `<dir>`; `npx tsx bench/cpu-profile.ts <file> --maps .esbuild/.build/functions`
 * then tells which packages the import time went to (the profiler's own
 * overhead inflates the times of those runs).
 *
 * Without `--package`, runs `serverless package` (offline) into
 * .local/bench-cold-start/package first. Each zip is unzipped into a
 * temporary directory; each run spawns `node` on a small script that imports
 * the handler file with `import()` and invokes it once with a realistic event
 * (a schedule's, or a pod event for pod-sync) and a Lambda-shaped context,
 * with the functions' configuration pointing DynamoDB, the tick queue and the
 * cluster at a local server of this process. The first request is a
 * DynamoDB write (the release gate's or a lock's), or for the tick function
 * the SQS request that checks its chain; the child notes when it starts
 * (node:diagnostics_channel) and exits there. Times come from the child's own
 * clock (performance.now(), from the process's start) and, for the whole
 * thing, from this process's spawn to the child's report.
 *
 * `--source-maps on` runs the children with `--enable-source-maps` (what
 * NODE_OPTIONS in serverless.yml set while the maps were in the zips); the
 * default measures both.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../lib/events/pod-event.ts';
import { scheduledEvent } from '../lib/local/lambda-context.ts';
import { benchLog, distribution, fixed, machineSummary, markdownTable } from './support.ts';

const root = new URL('..', import.meta.url).pathname;
const benchDir = join(root, '.local', 'bench-cold-start');
const log = benchLog('bench cold-start');
const run = promisify(execFile);

/** Each function's zip and its handler file inside it. */
const FUNCTIONS = [
  { zip: 'tick.zip', handler: 'functions/tick.mjs', name: 'tick' },
  { zip: 'heartbeat.zip', handler: 'functions/heartbeat.mjs', name: 'heartbeat' },
  { zip: 'podWatch.zip', handler: 'functions/pod-watch.mjs', name: 'pod-watch' },
  { zip: 'podSync.zip', handler: 'functions/pod-sync.mjs', name: 'pod-sync' },
  { zip: 'podStatus.zip', handler: 'functions/pod-status.mjs', name: 'pod-status' },
  { zip: 'reconcile.zip', handler: 'functions/reconcile.mjs', name: 'reconcile' },
] as const;

/**
 * What each child runs: plain JavaScript for plain `node`, as the Lambda
 * runtime would load the handler. It prints one JSON line with its times.
 */
const CHILD = `
import { subscribe } from 'node:diagnostics_channel';
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const started = performance.now();
const startedCpu = cpu();
const [handlerPath, eventJson, functionName] = process.argv.slice(2);
let invokedAt;
let importedAt;
let importedCpu;
subscribe('http.client.request.start', ({ request }) => {
  const at = performance.now();
  process.stdout.write(JSON.stringify({ started, startedCpu, importedAt, importedCpu, invokedAt, firstRequestAt: at, firstRequestCpu: cpu(), request: request.method + ' ' + request.host + request.path }) + '\\n');
  process.exit(0);
});
const { handler } = await import(handlerPath);
importedAt = performance.now();
importedCpu = cpu();
const deadline = Date.now() + 60_000;
const context = {
  functionName, functionVersion: '$LATEST', invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:' + functionName,
  memoryLimitInMB: '256', awsRequestId: 'cold-start', logGroupName: '/aws/lambda/' + functionName, logStreamName: 'cold',
  callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => deadline - Date.now(),
  done() {}, fail() {}, succeed() {},
};
invokedAt = performance.now();
await handler(JSON.parse(eventJson), context).catch((err) => {
  process.stdout.write(JSON.stringify({ started, importedAt, invokedAt, error: String(err) }) + '\\n');
  process.exit(1);
});
process.stdout.write(JSON.stringify({ started, importedAt, invokedAt, error: 'no request' }) + '\\n');
process.exit(1);
`;

interface ChildTimes {
  /** Wall-clock ms since the process started (performance.now()), and CPU ms (user + system) so far. */
  started: number;
  startedCpu: number;
  importedAt: number;
  importedCpu: number;
  invokedAt: number;
  firstRequestAt?: number;
  firstRequestCpu?: number;
  request?: string;
  error?: string;
}

function isChildTimes(value: unknown): value is ChildTimes {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.started === 'number' && typeof v.importedAt === 'number' && typeof v.invokedAt === 'number';
}

/** A server that accepts connections and never answers: the children exit at their first request. */
async function sink(): Promise<{ server: Server; port: number }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('sink has no port');
  return { server, port: address.port };
}

function kubeconfig(port: number): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters: [{name: c, cluster: {server: "https://127.0.0.1:' +
      port +
      '", insecure-skip-tls-verify: true}}]',
    'users: [{name: u, user: {token: cold-start}}]',
    'contexts: [{name: x, context: {cluster: c, user: u}}]',
    'current-context: x',
  ].join('\n');
}

function eventFor(name: string): unknown {
  if (name !== 'pod-sync') return scheduledEvent({ ruleName: `${name}-schedule` });
  return {
    version: '0',
    id: 'cold-start-event',
    'detail-type': POD_EVENT_DETAIL_TYPE,
    source: POD_EVENT_SOURCE,
    account: '000000000000',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [],
    detail: {
      v: 1,
      type: 'ADDED',
      node: 'virtual-kubelet',
      namespace: 'default',
      name: 'cold',
      uid: 'cold-start-uid',
      resourceVersion: '1',
    },
  };
}

async function spawnChild(
  dir: string,
  fn: (typeof FUNCTIONS)[number],
  env: Record<string, string>,
  sourceMaps: boolean,
  cpuProfDir?: string,
): Promise<ChildTimes & { wallMs: number }> {
  const begun = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...(sourceMaps ? ['--enable-source-maps'] : []),
      ...(cpuProfDir
        ? [
            '--cpu-prof',
            '--cpu-prof-dir',
            cpuProfDir,
            '--cpu-prof-name',
            `${fn.name}-${Date.now()}.cpuprofile`,
          ]
        : []),
      join(dir, 'child.mjs'),
      join(dir, fn.handler),
      JSON.stringify(eventFor(fn.name)),
      fn.name,
    ],
    { env, stdio: ['ignore', 'pipe', 'ignore'], cwd: dir },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  await new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const wallMs = performance.now() - begun;
  // The child's report, not the function's own JSON lines (its EMF metrics, its log).
  const parsed: unknown = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l): unknown => JSON.parse(l))
    .find(isChildTimes);
  if (!isChildTimes(parsed)) throw new Error(`${fn.name}: the child reported nothing (${out.slice(0, 200)})`);
  if (parsed.error) throw new Error(`${fn.name}: ${parsed.error}`);
  return { ...parsed, wallMs };
}

/**
 * The bytes and files a handler loads at import: its file and the chunks it
 * imports statically, transitively (esbuild writes `from"./x.mjs"` and
 * `import"./x.mjs"`); a dynamic `import("./x.mjs")` loads later, if ever.
 */
function staticImportSet(handlerPath: string): { bytes: number; files: number } {
  const seen = new Set<string>();
  const pending = [handlerPath];
  let bytes = 0;
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    if (seen.has(path)) continue;
    seen.add(path);
    const text = readFileSync(path, 'utf8');
    bytes += Buffer.byteLength(text);
    for (const match of text.matchAll(/(?:from|import)\s*"(\.\/[^"]+\.mjs)"/g))
      if (match[1]) pending.push(join(dirname(path), match[1]));
  }
  return { bytes, files: seen.size };
}

function sizeOf(dir: string): { total: number; code: number; maps: number; files: number } {
  const result = { total: 0, code: 0, maps: 0, files: 0 };
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const stat = statSync(path);
      if (stat.isDirectory()) walk(path);
      else {
        result.files++;
        result.total += stat.size;
        if (name.endsWith('.map')) result.maps += stat.size;
        else if (name.endsWith('.mjs') || name.endsWith('.js')) result.code += stat.size;
      }
    }
  };
  walk(dir);
  return result;
}

/** What the handler loads before its first request: its file and every chunk it imports, statically or not. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      package: { type: 'string' },
      only: { type: 'string' },
      'cpu-prof': { type: 'string' },
      runs: { type: 'string', default: '15' },
      'source-maps': { type: 'string', default: 'both' },
    },
  });
  const runs = Number(values.runs);
  if (!(Number.isInteger(runs) && runs >= 1))
    throw new Error(`--runs must be a positive integer, got ${values.runs}`);
  const modes = { both: [false, true], on: [true], off: [false] }[values['source-maps']];
  if (!modes) throw new Error(`--source-maps must be both, on or off, got ${values['source-maps']}`);
  mkdirSync(benchDir, { recursive: true });
  let packageDir = values.package;
  if (!packageDir) {
    packageDir = join(benchDir, 'package');
    log(`serverless package into ${packageDir} (offline, about a minute)`);
    const env: Record<string, string | undefined> = {
      ...process.env,
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
      AWS_CONFIG_FILE: '/nonexistent',
    };
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'])
      delete env[name];
    await run(
      join(root, 'node_modules/.bin/serverless'),
      ['package', '--stage', 'bench', '--package', packageDir],
      {
        cwd: root,
        env,
        timeout: 600_000,
      },
    );
  }
  const { server, port } = await sink();
  const work = mkdtempSync(join(tmpdir(), 'svk-cold-start-'));
  try {
    writeFileSync(join(work, 'kubeconfig'), kubeconfig(port));
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: work,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'AKIDCOLDSTART',
      AWS_SECRET_ACCESS_KEY: 'cold-start',
      AWS_SESSION_TOKEN: 'cold-start',
      SVK_TABLE_NAME: 'cold-start',
      // Measures the functions' start, not a provider's.
      SVK_PROVIDER: 'mock',
      SVK_DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}`,
      SVK_KUBECONFIG: join(work, 'kubeconfig'),
      SVK_LOG_LEVEL: 'warn',
      SVK_METRICS: 'emf',
      SVK_TICK_QUEUE_URL: `http://127.0.0.1:${port}/000000000000/cold-start-tick.fifo`,
    };
    const rows: string[][] = [];
    const raw: Record<string, unknown> = {};
    const only = values.only?.split(',');
    for (const fn of FUNCTIONS.filter((f) => !only || only.includes(f.name))) {
      const dir = join(work, fn.name);
      mkdirSync(dir, { recursive: true });
      await run('unzip', ['-q', '-o', join(packageDir, fn.zip), '-d', dir]);
      writeFileSync(join(dir, 'child.mjs'), CHILD);
      const size = sizeOf(dir);
      const loaded = staticImportSet(join(dir, fn.handler));
      for (const sourceMaps of modes) {
        const times: Array<ChildTimes & { wallMs: number }> = [];
        // One run first to warm the file cache: Lambda reads the code from its own cache too.
        await spawnChild(dir, fn, env, sourceMaps);
        for (let i = 0; i < runs; i++)
          times.push(await spawnChild(dir, fn, env, sourceMaps, values['cpu-prof']));
        const d = (pick: (t: ChildTimes & { wallMs: number }) => number) => distribution(times.map(pick));
        const boot = d((t) => t.started);
        const imported = d((t) => t.importedAt - t.started);
        const invoked = d((t) => (t.firstRequestAt ?? Number.NaN) - t.invokedAt);
        const toFirst = d((t) => t.firstRequestAt ?? Number.NaN);
        const wall = d((t) => t.wallMs);
        const cpuImport = d((t) => t.importedCpu - t.startedCpu);
        const cpuFirst = d((t) => t.firstRequestCpu ?? Number.NaN);
        raw[`${fn.name}${sourceMaps ? ' +maps' : ''}`] = { size, loaded, times };
        rows.push([
          fn.name,
          sourceMaps ? 'on' : 'off',
          `${fixed(size.total / 2 ** 20, 2)} (${fixed(size.code / 2 ** 20, 2)} code, ${fixed(size.maps / 2 ** 20, 2)} maps, ${size.files} files)`,
          `${fixed(loaded.bytes / 2 ** 20, 2)} (${loaded.files} files)`,
          fixed(boot.p50, 0),
          `${fixed(imported.p50, 0)} / ${fixed(imported.max, 0)}`,
          `${fixed(invoked.p50, 0)} / ${fixed(invoked.max, 0)}`,
          `**${fixed(toFirst.p50, 0)}** / ${fixed(toFirst.max, 0)}`,
          `${fixed(cpuImport.p50, 0)} / ${fixed(cpuFirst.p50, 0)}`,
          fixed(wall.p50, 0),
          times[0]?.request ?? '',
        ]);
        log(
          `${fn.name} (source maps ${sourceMaps ? 'on' : 'off'}): first request after ${fixed(toFirst.p50, 0)} ms (p50)`,
        );
      }
    }
    const text = [
      `Machine: ${machineSummary()}; Node ${process.version}; ${runs} runs per row (after one to warm the file cache), load average ${(
        await import('node:os')
      )
        .loadavg()
        .map((l) => fixed(l))
        .join(' ')}.`,
      '',
      markdownTable(
        [
          'function',
          '--enable-source-maps',
          'unzipped MiB',
          'loaded at import MiB',
          'node start (ms)',
          'import p50 / max (ms)',
          'first invocation to first request p50 / max (ms)',
          'process start to first request p50 / max (ms)',
          'CPU ms p50: import / process start to first request',
          'spawn to exit p50 (ms)',
          'first request',
        ],
        rows,
      ),
    ].join('\n');
    const file = join(benchDir, `cold-start-${new Date().toISOString().replaceAll(':', '-')}`);
    writeFileSync(`${file}.json`, JSON.stringify({ packageDir, runs, raw }, null, 2));
    writeFileSync(`${file}.md`, `${text}\n`);
    process.stdout.write(`${text}\n`);
  } finally {
    server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
