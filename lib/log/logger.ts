import { errorFields } from './error-fields.ts';
import { redact, scrubSecrets } from './redact.ts';

export { scrubSecrets };

/**
 * The functions' logger: JSON lines on stdout (or `destination`), which
 * CloudWatch Logs Insights parses field by field, written as pino wrote
 * them with the options this project used: `{"level":"info","time":"<ISO
 * 8601>",<base and child fields>,<the call's fields>,"msg":"..."}`, the level
 * as its name, errors under `err` in a few short fields (error-fields.ts).
 * Our own, in about a hundred lines, because pino and its dependencies cost
 * a cold start about 15 ms of CPU to import (docs/benchmarks.md, "Cold start")
 * for features we do not use (transports, asynchronous streams, custom
 * levels). Per-invocation fields (request id, function, node, pod key) are
 * bound with `child` by the handler, never through global state, because
 * the local runtime runs invocations concurrently in one process. Secrets
 * are removed twice (lib/log/redact.ts): by key, and from the finished line.
 * Lines are written synchronously, as pino's default destination does, so
 * that none is lost when Lambda freezes the process after an invocation.
 */

export type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** pino's level numbers; `silent` writes nothing. */
const LEVELS: Record<LevelName | 'silent', number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};

/**
 * Logs a line: `log.info('message')`, `log.info({ pod, uid }, 'message')`,
 * or `log.error(err)` / `log.error(err, 'message')` (the error under `err`,
 * its message as the line's when none is given).
 */
export interface LogFn {
  (message: string): void;
  (fields: object, message?: string): void;
}

export interface Logger {
  readonly level: string;
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
  /** A logger whose every line also carries `bindings`. */
  child(bindings: Record<string, unknown>): Logger;
  isLevelEnabled(level: string): boolean;
}

/** Where lines go: anything with a synchronous-enough `write`, e.g. process.stdout or a Writable. */
export interface LogDestination {
  write(line: string): unknown;
}

export interface LoggerOptions {
  level: string;
  /** Fields on every line, before any child's. */
  base?: Record<string, unknown>;
}

function levelOf(name: string): number {
  if (!Object.hasOwn(LEVELS, name)) throw new Error(`unknown log level "${name}"`);
  return LEVELS[name as keyof typeof LEVELS];
}

/** The fields of a line whose serializers run: `err` as error-fields.ts writes an error. */
function serialized(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.hasOwn(fields, 'err') ? { ...fields, err: errorFields(fields.err) } : fields;
}

/** JSON of `value`; a circular reference or a bigint does not lose the line. */
function stringify(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    const seen = new WeakSet<object>();
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[Circular]';
        seen.add(v);
      }
      return v;
    });
  }
}

class JsonLogger implements Logger {
  readonly #threshold: number;
  readonly #bindings: Record<string, unknown>;
  readonly #destination: LogDestination;
  readonly fatal: LogFn = (a: object | string, b?: string) => this.#log('fatal', a, b);
  readonly error: LogFn = (a: object | string, b?: string) => this.#log('error', a, b);
  readonly warn: LogFn = (a: object | string, b?: string) => this.#log('warn', a, b);
  readonly info: LogFn = (a: object | string, b?: string) => this.#log('info', a, b);
  readonly debug: LogFn = (a: object | string, b?: string) => this.#log('debug', a, b);
  readonly trace: LogFn = (a: object | string, b?: string) => this.#log('trace', a, b);

  constructor(
    readonly level: string,
    bindings: Record<string, unknown>,
    destination: LogDestination,
  ) {
    this.#threshold = levelOf(level);
    this.#bindings = bindings;
    this.#destination = destination;
  }

  child(bindings: Record<string, unknown>): Logger {
    return new JsonLogger(this.level, { ...this.#bindings, ...serialized(bindings) }, this.#destination);
  }

  isLevelEnabled(level: string): boolean {
    return levelOf(level) >= this.#threshold;
  }

  #log(level: LevelName, first: object | string, message?: string): void {
    if (LEVELS[level] < this.#threshold) return;
    let fields: Record<string, unknown> = {};
    let msg = message;
    if (typeof first === 'string') msg = first;
    else if (first instanceof Error) {
      fields = { err: first };
      msg ??= first.message;
    } else fields = first as Record<string, unknown>;
    const line = {
      level,
      time: new Date().toISOString(),
      ...this.#bindings,
      ...serialized(fields),
      ...(msg !== undefined ? { msg } : {}),
    };
    this.#destination.write(`${scrubSecrets(stringify(redact(line)))}\n`);
  }
}

/**
 * Creates the root logger. `options.level` is one of fatal, error, warn,
 * info, debug, trace, silent (the config validates SVK_LOG_LEVEL).
 * @throws Error for any other level.
 */
export function createLogger(options: LoggerOptions, destination: LogDestination = process.stdout): Logger {
  return new JsonLogger(options.level, serialized(options.base ?? {}), destination);
}
