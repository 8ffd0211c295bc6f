import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { answersListTables } from '../state/dynamodb-clients.ts';
import { freePort } from './free-ports.ts';

/**
 * Runs the official DynamoDB Local (the jar shipped in the npm package
 * `amplify-dynamodb-simulator`) on the local Java, for tests and `npm start`.
 *
 * The jar has no option to choose the listen address: Jetty binds every
 * interface. The endpoint handed out is always 127.0.0.1, and nothing else on
 * this machine is meant to reach it.
 */

export interface DynamoDbLocalOptions {
  /** Data directory (`-dbPath`); only with `inMemory: false`. Created when missing. */
  dir?: string;
  /** Keep tables in memory only. Default: true unless `dir` is given. */
  inMemory?: boolean;
  /** Fixed port; by default a free one is picked. */
  port?: number;
  /** Receives the emulator's output and lifecycle lines. */
  log?: (line: string) => void;
  /** How long start-up may take before it is abandoned. Default 60 s (a busy 2-core machine). */
  startTimeoutMs?: number;
}

export interface DynamoDbLocal {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  port: number;
  pid: number;
  /** Terminates the JVM (SIGTERM, then SIGKILL) and resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
}

/** DynamoDB Local did not come up: Java missing, the JVM died, or no answer in time. */
export class DynamoDbLocalStartError extends Error {
  override readonly name = 'DynamoDbLocalStartError';
}

// The JVM keeps running after Jetty fails to bind, so the log is the only signal.
const BIND_FAILURE = /Failed to bind|BindException/;
const MAX_PORT_ATTEMPTS = 3;
const STOP_GRACE_MS = 10_000;
const LOG_TAIL_LINES = 40;

/**
 * Starts DynamoDB Local with `-sharedDb` (every region and credential sees the
 * same tables) and resolves once it answers ListTables.
 * @throws DynamoDbLocalStartError with the tail of its output when it cannot start.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const storage = storageArgs(options);

  for (let attempt = 1; ; attempt++) {
    // Free on every interface, as Jetty binds all of them.
    const port = options.port ?? (await freePort());
    try {
      return await startOnce(port, storage, options);
    } catch (err) {
      // A free port can be taken between the probe and the JVM's bind (outgoing
      // connections draw from the same range): try another one.
      const retry =
        err instanceof PortInUseError && options.port === undefined && attempt < MAX_PORT_ATTEMPTS;
      if (!retry) throw err instanceof PortInUseError ? new DynamoDbLocalStartError(err.message) : err;
      options.log?.(`dynamodb-local: port ${port} was taken, retrying on another`);
    }
  }
}

class PortInUseError extends Error {}

function storageArgs(options: DynamoDbLocalOptions): string[] {
  const { dir } = options;
  const inMemory = options.inMemory ?? dir === undefined;
  if (inMemory) {
    if (dir !== undefined) {
      throw new TypeError('startDynamoDbLocal: `dir` is for on-disk tables; it cannot be used with inMemory');
    }
    return ['-inMemory'];
  }
  if (dir === undefined) {
    throw new TypeError('startDynamoDbLocal: `inMemory: false` needs `dir` for the data files');
  }
  const path = resolve(dir);
  mkdirSync(path, { recursive: true });
  return ['-dbPath', path];
}

async function startOnce(
  port: number,
  storage: string[],
  options: DynamoDbLocalOptions,
): Promise<DynamoDbLocal> {
  const started = performance.now();
  const jvm = new DynamoDbLocalProcess(port, storage, options.log);
  const endpoint = `http://127.0.0.1:${port}`;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = performance.now() + timeoutMs;
  try {
    for (;;) {
      const failed = jvm.startFailure();
      if (failed) throw failed;
      // Checked after the answer too: another server on this port would answer for us.
      if (jvm.running() && (await answers(endpoint)) && !jvm.startFailure() && jvm.running()) break;
      if (performance.now() >= deadline) {
        throw new DynamoDbLocalStartError(
          jvm.withOutput(`DynamoDB Local did not answer within ${timeoutMs} ms`),
        );
      }
      await delay(100);
    }
  } catch (err) {
    await jvm.stop();
    throw err;
  }
  const pid = jvm.pid ?? 0; // defined: running() checked it
  options.log?.(
    `dynamodb-local: ready on ${endpoint} in ${Math.round(performance.now() - started)} ms ` +
      `(pid ${pid}, ${storage.join(' ')})`,
  );
  return { endpoint, port, pid, stop: () => jvm.stop() };
}

/** The JVM running DynamoDB Local: its recent output, how it failed, and a stop that cannot be missed. */
class DynamoDbLocalProcess {
  readonly #child: ChildProcess;
  readonly #port: number;
  readonly #log: ((line: string) => void) | undefined;
  readonly #tail: string[] = [];
  readonly #exited: Promise<void>;
  #bindFailed = false;
  #spawnError: NodeJS.ErrnoException | undefined;
  #stopping: Promise<void> | undefined;

  constructor(port: number, storage: string[], log: ((line: string) => void) | undefined) {
    this.#port = port;
    this.#log = log;
    const emulatorDir = emulatorDirectory();
    this.#child = spawn('java', jvmArgs(emulatorDir, port, storage), {
      cwd: emulatorDir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' },
    });
    const killOnExit = () => {
      if (this.running()) this.#child.kill('SIGKILL');
    };
    process.on('exit', killOnExit);
    for (const stream of [this.#child.stdout, this.#child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.#onLine(line));
    }
    this.#exited = new Promise<void>((resolveExit) => {
      this.#child.once('exit', (code, signal) => {
        process.off('exit', killOnExit);
        if (!this.#stopping) log?.(`dynamodb-local: exited unexpectedly (code ${code}, signal ${signal})`);
        resolveExit();
      });
    });
    this.#child.once('error', (err: NodeJS.ErrnoException) => {
      this.#spawnError = err;
      process.off('exit', killOnExit);
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** A child that failed to spawn has no pid and may never emit 'exit'. */
  running(): boolean {
    const child = this.#child;
    return (
      child.pid !== undefined && !this.#spawnError && child.exitCode === null && child.signalCode === null
    );
  }

  /** Why start-up has failed, if it has: no Java, a port already bound, or the JVM gone. */
  startFailure(): Error | undefined {
    const spawnError = this.#spawnError;
    if (spawnError) {
      return new DynamoDbLocalStartError(
        spawnError.code === 'ENOENT'
          ? 'DynamoDB Local needs Java, and `java` is not on PATH: run scripts/ensure-kube.sh, ' +
              'or install it with `apt-get install openjdk-17-jre-headless`'
          : `could not run java: ${spawnError.message}`,
      );
    }
    if (this.#bindFailed)
      return new PortInUseError(this.withOutput(`DynamoDB Local could not bind port ${this.#port}`));
    const { exitCode, signalCode } = this.#child;
    if (exitCode !== null || signalCode !== null) {
      return new DynamoDbLocalStartError(
        this.withOutput(`DynamoDB Local exited during start-up (code ${exitCode}, signal ${signalCode})`),
      );
    }
    return undefined;
  }

  /** `message` followed by the last lines DynamoDB Local wrote. */
  withOutput(message: string): string {
    const tail = this.#tail;
    return `${message}${tail.length > 0 ? `\n--- DynamoDB Local output (last lines) ---\n${tail.join('\n')}` : ''}`;
  }

  /** SIGTERM, then SIGKILL after a grace period; resolves once the JVM has exited. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      if (!this.running()) return;
      this.#child.kill('SIGTERM');
      const grace = new AbortController();
      const graceful = await Promise.race([
        this.#exited.then(() => true),
        delay(STOP_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
      ]);
      grace.abort();
      if (!graceful) {
        this.#log?.('dynamodb-local: did not exit on SIGTERM, killing');
        this.#child.kill('SIGKILL');
        await this.#exited;
      }
    })();
    return this.#stopping;
  }

  #onLine(line: string): void {
    this.#tail.push(line);
    if (this.#tail.length > LOG_TAIL_LINES) this.#tail.shift();
    if (BIND_FAILURE.test(line)) this.#bindFailed = true;
    this.#log?.(`dynamodb-local: ${line}`);
  }
}

function jvmArgs(emulatorDir: string, port: number, storage: string[]): string[] {
  return [
    // Start-up and CPU matter more than peak throughput for tests on 2 cores.
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    `-Djava.library.path=${join(emulatorDir, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(emulatorDir, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    ...storage,
    '-sharedDb',
    // Telemetry would try to reach AWS from a machine that has no business doing so.
    '-disableTelemetry',
  ];
}

function emulatorDirectory(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('amplify-dynamodb-simulator')), 'emulator');
}

/** One ListTables of at most 5 s (DynamoDB Local checks that a credential is present, not the signature). */
function answers(endpoint: string): Promise<boolean> {
  return answersListTables(endpoint, 5_000);
}
