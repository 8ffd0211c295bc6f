/**
 * Removing secrets from what is logged, twice: by key, at the paths below
 * (pino's `redact` option: `a.b`, `*` for any key, `[*]` for any element),
 * and, as a last resort, from the finished line (credentials quoted inside
 * strings, which no path reaches: pino's `streamWrite` hook). lib/log/logger.ts
 * applies both to every line.
 */

/**
 * Keys whose values never reach a log line. Paths match exactly, so the
 * usual places are spelled out: top level, one level down (`err.token`), and
 * HTTP headers of requests and errors (client-node's and the AWS SDK's
 * errors carry the request or response headers).
 */
export const REDACTED_PATHS: readonly string[] = [
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

export const CENSOR = '[redacted]';

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
