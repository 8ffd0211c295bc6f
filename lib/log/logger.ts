import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';
import { errorFields } from './error-fields.ts';

export type { Logger };

/**
 * Keys whose values never reach a log line. pino matches paths exactly, so
 * the usual places are spelled out: top level, one level down (`err.token`),
 * and HTTP headers of requests and errors (client-node's and the AWS SDK's
 * errors carry the request or response headers).
 */
const REDACTED = [
  'token',
  'password',
  'secret',
  'authorization',
  'kubeconfig',
  'kubeconfigYaml',
  '*.token',
  '*.password',
  '*.secret',
  '*.authorization',
  '*.Authorization',
  '*.kubeconfig',
  '*.kubeconfigYaml',
  '*.bearerToken',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.*.headers.authorization',
  '*.*.headers.Authorization',
  '*.user.token',
  '*.users[*].user.token',
];

/**
 * Credentials that may hide inside strings (an error message quoting a
 * request, a presigned URL): bearer tokens, EKS tokens, presigned-URL
 * signatures and credentials, and `token: value` pairs. The first group of
 * each pattern is kept.
 */
const SECRET_PATTERNS: ReadonlyArray<RegExp> = [
  /(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
  /()\bk8s-aws-v1\.[A-Za-z0-9_-]+/g,
  /(\bX-Amz-(?:Security-Token|Signature|Credential)=)[^&\s"\\]+/gi,
  /(\b(?:token|password|client-key-data)\\?"?\s*[:=]\s*\\?"?)(?!\[redacted\])[^\s"\\,}&]+/gi,
];

/** Replaces credentials found inside `text` with `[redacted]`. */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, '$1[redacted]');
  return out;
}

/**
 * Creates the root logger: JSON lines on stdout (or `destination`), which
 * CloudWatch Logs Insights parses field by field. Per-invocation fields
 * (request id, function, node, pod key) are bound with `child` by the
 * handler, never through global state, because the local runtime runs
 * invocations concurrently in one process. Errors are logged in a few short
 * fields (error-fields.ts). Secrets are removed twice: by key
 * (redact paths) and, as a last resort, from the finished line.
 */
export function createLogger(
  options: { level: string; base?: Record<string, unknown> } & LoggerOptions,
  destination?: DestinationStream,
): Logger {
  const { level, base, ...rest } = options;
  const settings: LoggerOptions = {
    level,
    base: base ?? null,
    messageKey: 'msg',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: errorFields },
    redact: { paths: REDACTED, censor: '[redacted]' },
    hooks: { streamWrite: scrubSecrets },
    ...rest,
  };
  return destination ? pino(settings, destination) : pino(settings);
}
