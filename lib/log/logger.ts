import { pino } from 'pino';
import { errorFields } from './error-fields.ts';
import { CENSOR, REDACTED_PATHS, scrubSecrets } from './redact.ts';

export { scrubSecrets };

/**
 * The functions' logger: pino, writing JSON lines to stdout (or
 * `destination`), which CloudWatch Logs Insights parses field by field:
 * `{"level":"INFO","time":"<ISO 8601>",<base and child fields>,<the call's
 * fields>,"msg":"..."}`. The level is printed as Powertools for AWS Lambda
 * prints it (upper case; `fatal` as its `CRITICAL`), and the Lambda fields
 * carry Powertools' names (lib/log/lambda-fields.ts), so that the queries
 * and dashboards written for Powertools' logs read ours. Errors go under
 * `err` in a few short fields (error-fields.ts).
 *
 * Per-invocation fields are bound with `child` by the entry points
 * (invocationLog in lib/invocation.ts), never through global state, because
 * the local runtime runs invocations concurrently in one process. Secrets
 * are removed twice (lib/log/redact.ts): by key with pino's `redact`, and
 * from the finished line by the `streamWrite` hook. Lines go to
 * `process.stdout` unless told otherwise: synchronous for files and pipes on
 * Linux, so no line is lost when Lambda freezes the process after an
 * invocation, and a test or bench that wraps `process.stdout.write` sees
 * every line.
 */

export type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** The levels SVK_LOG_LEVEL takes; `silent` writes nothing. */
const LEVEL_NAMES: ReadonlySet<string> = new Set([
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
]);

/** How Powertools prints each level: its own name in upper case, its `critical` for our `fatal`. */
const PRINTED_LEVEL: Record<string, string> = {
  fatal: 'CRITICAL',
  error: 'ERROR',
  warn: 'WARN',
  info: 'INFO',
  debug: 'DEBUG',
  trace: 'TRACE',
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

/** What the rest of the code uses of pino's logger. */
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
  write(line: string): void;
}

export interface LoggerOptions {
  level: string;
  /** Fields on every line, before any child's. */
  base?: Record<string, unknown>;
}

/**
 * Creates the root logger. `options.level` is one of fatal, error, warn,
 * info, debug, trace, silent (the config validates SVK_LOG_LEVEL).
 * @throws Error for any other level.
 */
export function createLogger(options: LoggerOptions, destination: LogDestination = process.stdout): Logger {
  if (!LEVEL_NAMES.has(options.level)) throw new Error(`unknown log level "${options.level}"`);
  return pino(
    {
      level: options.level,
      base: options.base ?? null,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: PRINTED_LEVEL[label] ?? label.toUpperCase() }) },
      serializers: { err: errorFields },
      redact: { paths: [...REDACTED_PATHS], censor: CENSOR },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}
