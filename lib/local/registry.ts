/**
 * A local image registry for tests: Debian's `docker-registry` (the CNCF
 * distribution registry 2.8) on 127.0.0.1 over plain HTTP, with one user
 * behind htpasswd basic auth, its configuration, password file and blobs
 * under one directory. The engine that pulls from it must be told it is
 * insecure (lib/local/podman.ts takes `insecureRegistries`).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';

/** Makes the registry die with us even when we are SIGKILLed (util-linux; skipped when absent). */
const SETPRIV = '/usr/bin/setpriv';
const REGISTRY = 'docker-registry';
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;
/** The registry binds port 0 and names the port it got in this line of its log. */
const LISTENING = /listening on (127\.0\.0\.1:\d+)/;

export interface StartRegistryOptions {
  /** The registry's directory; created, and replaced on each start. */
  dir: string;
  log?: (line: string) => void;
}

/** A running local registry. */
export interface LocalRegistry {
  /** `127.0.0.1:<port>`: the registry part of an image reference, and the key of a dockerconfigjson entry. */
  address: string;
  /** The one user it accepts, and its password (random per start). */
  username: string;
  password: string;
  dir: string;
  /** Stops the registry (SIGTERM, then SIGKILL) and deletes its directory. Idempotent. */
  stop(): Promise<void>;
}

export async function startRegistry(options: StartRegistryOptions): Promise<LocalRegistry> {
  const log = options.log ?? (() => {});
  const dir = options.dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'data'), { recursive: true });
  const username = 'svk-test';
  const password = randomBytes(12).toString('hex');
  writeFileSync(join(dir, 'htpasswd'), await bcryptLine(username, password));
  writeFileSync(join(dir, 'config.yml'), registryConfig(dir));
  const child = spawnRegistry(dir);
  const stop = once(async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    const started = Date.now();
    const address = await listeningAddress(child, dir);
    await waitAnswers(address);
    log(`registry ready on ${address} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    return { address, username, password, dir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The registry's configuration: the password file, storage in the
 * directory, an HTTP secret of its own (it would make one up and warn), and
 * info logs, which carry the line naming the port.
 */
function registryConfig(dir: string): string {
  return [
    'version: 0.1',
    'log:',
    '  level: info',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${JSON.stringify(join(dir, 'data'))}`,
    'http:',
    '  addr: 127.0.0.1:0',
    `  secret: ${randomBytes(16).toString('hex')}`,
    'auth:',
    '  htpasswd:',
    '    realm: svk-test-registry',
    `    path: ${JSON.stringify(join(dir, 'htpasswd'))}`,
    '',
  ].join('\n');
}

/** The registry reads bcrypt entries only: apache2-utils' htpasswd makes one, the password on its stdin. */
function bcryptLine(username: string, password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('htpasswd', ['-niB', username], (err, stdout, stderr) =>
      err ? reject(new Error(`htpasswd failed: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin?.end(password);
  });
}

function spawnRegistry(dir: string): ChildProcess {
  const args = ['serve', join(dir, 'config.yml')];
  const [cmd, argv] = existsSync(SETPRIV)
    ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', REGISTRY, ...args]]
    : [REGISTRY, args];
  return spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Follows the registry's output into `registry.log` until it names the port it listens on. */
function listeningAddress(child: ChildProcess, dir: string): Promise<string> {
  const out = createWriteStream(join(dir, 'registry.log'));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`registry did not listen within ${READY_TIMEOUT_MS} ms; see ${dir}/registry.log`)),
      READY_TIMEOUT_MS,
    );
    const settle = (fn: () => void) => {
      clearTimeout(timer);
      fn();
    };
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        out.write(`${line}\n`);
        const match = LISTENING.exec(line);
        if (match?.[1]) settle(() => resolve(match[1] as string));
      });
    }
    child.once('error', (err) =>
      settle(() =>
        reject(new Error(`could not run ${REGISTRY} (scripts/ensure-podman.sh installs it)`, { cause: err })),
      ),
    );
    child.once('exit', (code, signal) => {
      out.end();
      settle(() =>
        reject(new Error(`registry exited with ${signal ?? code} at start; see ${dir}/registry.log`)),
      );
    });
  });
}

/** Polls the API base until it asks for credentials, as a registry behind basic auth does. */
async function waitAnswers(address: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const status = await fetch(`http://${address}/v2/`).then(
      (res) => res.status,
      (err: unknown) => {
        if (Date.now() > deadline) throw new Error(`registry on ${address} does not answer`, { cause: err });
        return undefined;
      },
    );
    if (status === 401) return;
    if (status !== undefined) throw new Error(`registry on ${address}: GET /v2/ answered ${status}, not 401`);
    await delay(50);
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= fn();
    return running;
  };
}
