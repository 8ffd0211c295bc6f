import { type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

/** Keys whose values never reach a log line, wherever they appear in the first two levels. */
const REDACTED = [
  'token',
  'password',
  'secret',
  'authorization',
  'kubeconfig',
  '*.token',
  '*.password',
  '*.secret',
  '*.authorization',
  '*.kubeconfig',
  'headers.authorization',
];

/**
 * Creates the root logger: JSON lines on stdout, which CloudWatch Logs
 * Insights parses field by field. Per-invocation fields (request id, function,
 * node, pod key) are bound with `child` by the handler, never through global
 * state, because the local runtime runs invocations concurrently in one process.
 */
export function createLogger(
  options: { level: string; base?: Record<string, unknown> } & LoggerOptions,
): Logger {
  const { level, base, ...rest } = options;
  return pino({
    level,
    base: base ?? null,
    messageKey: 'msg',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED, censor: '[redacted]' },
    ...rest,
  });
}
