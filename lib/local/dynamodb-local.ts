import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';

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
  const emulatorDir = emulatorDirectory();
  const args = [
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
  const started = performance.now();
  const child = spawn('java', args, {
    cwd: emulatorDir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' },
  });
  let spawnError: NodeJS.ErrnoException | undefined;
  // A child that failed to spawn has no pid and may never emit 'exit'.
  const running = () =>
    child.pid !== undefined && !spawnError && child.exitCode === null && child.signalCode === null;
  const killOnExit = () => {
    if (running()) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  const tail: string[] = [];
  let bindFailed = false;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      tail.push(line);
      if (tail.length > LOG_TAIL_LINES) tail.shift();
      if (BIND_FAILURE.test(line)) bindFailed = true;
      options.log?.(`dynamodb-local: ${line}`);
    });
  }
  let stopping: Promise<void> | undefined;
  const exited = new Promise<void>((resolveExit) => {
    child.once('exit', (code, signal) => {
      process.off('exit', killOnExit);
      if (!stopping) options.log?.(`dynamodb-local: exited unexpectedly (code ${code}, signal ${signal})`);
      resolveExit();
    });
  });
  child.once('error', (err: NodeJS.ErrnoException) => {
    spawnError = err;
    process.off('exit', killOnExit);
  });

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (!running()) return;
      child.kill('SIGTERM');
      const grace = new AbortController();
      const graceful = await Promise.race([
        exited.then(() => true),
        delay(STOP_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
      ]);
      grace.abort();
      if (!graceful) {
        options.log?.('dynamodb-local: did not exit on SIGTERM, killing');
        child.kill('SIGKILL');
        await exited;
      }
    })();
    return stopping;
  };

  const endpoint = `http://127.0.0.1:${port}`;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = performance.now() + timeoutMs;
  const failure = (message: string) =>
    `${message}${tail.length > 0 ? `\n--- DynamoDB Local output (last lines) ---\n${tail.join('\n')}` : ''}`;
  try {
    for (;;) {
      if (spawnError) {
        throw new DynamoDbLocalStartError(
          spawnError.code === 'ENOENT'
            ? 'DynamoDB Local needs Java, and `java` is not on PATH: run scripts/ensure-kube.sh, ' +
                'or install it with `apt-get install openjdk-17-jre-headless`'
            : `could not run java: ${spawnError.message}`,
        );
      }
      if (bindFailed) throw new PortInUseError(failure(`DynamoDB Local could not bind port ${port}`));
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new DynamoDbLocalStartError(
          failure(
            `DynamoDB Local exited during start-up (code ${child.exitCode}, signal ${child.signalCode})`,
          ),
        );
      }
      // Checked after the answer too: another server on this port would answer for us.
      if (running() && (await answers(endpoint)) && !bindFailed && running()) break;
      if (performance.now() >= deadline) {
        throw new DynamoDbLocalStartError(failure(`DynamoDB Local did not answer within ${timeoutMs} ms`));
      }
      await delay(100);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const pid = child.pid ?? 0; // defined: running() checked it
  options.log?.(
    `dynamodb-local: ready on ${endpoint} in ${Math.round(performance.now() - started)} ms ` +
      `(pid ${pid}, ${storage.join(' ')})`,
  );
  return { endpoint, port, pid, stop };
}

function emulatorDirectory(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('amplify-dynamodb-simulator')), 'emulator');
}

/** A port that is free on every interface, as Jetty binds all of them. */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}

/**
 * One ListTables over plain HTTP, so this module needs no AWS SDK. DynamoDB
 * Local checks that a credential is present, not the signature.
 */
async function answers(endpoint: string): Promise<boolean> {
  try {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'DynamoDB_20120810.ListTables',
        authorization:
          'AWS4-HMAC-SHA256 Credential=local/20200101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: '{}',
      signal: AbortSignal.timeout(5_000),
    });
    const body: unknown = await response.json();
    return response.ok && typeof body === 'object' && body !== null && 'TableNames' in body;
  } catch {
    return false;
  }
}
