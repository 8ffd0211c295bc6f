/**
 * Removing secrets from what is logged, twice: by key, at the paths below
 * (pino's redact syntax: `a.b`, `*` for any key, `[*]` for any element),
 * and, as a last resort, from the finished line (credentials quoted inside
 * strings). lib/log/logger.ts applies both to every line.
 */

/**
 * Keys whose values never reach a log line. Paths match exactly, so the
 * usual places are spelled out: top level, one level down (`err.token`), and
 * HTTP headers of requests and errors (client-node's and the AWS SDK's
 * errors carry the request or response headers).
 */
export const REDACTED_PATHS = [
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

/** A path as segments, `*` standing for any key or element: `*.users[*].user.token` → `*`, `users`, `*`, `user`, `token`. */
export function parsePath(path: string): string[] {
  return path
    .replace(/\[\*\]/g, '.*')
    .split('.')
    .filter((segment) => segment !== '');
}

const PARSED_PATHS = REDACTED_PATHS.map(parsePath);

/**
 * `value` with every path of `paths` that exists in it replaced by the
 * censor. Nothing is changed in place: the objects and arrays along a
 * replaced path are copied, everything else is shared.
 */
export function redact(value: unknown, paths: ReadonlyArray<readonly string[]> = PARSED_PATHS): unknown {
  let out = value;
  for (const path of paths) out = redactPath(out, path, 0);
  return out;
}

function redactPath(value: unknown, path: readonly string[], depth: number): unknown {
  const segment = path[depth];
  if (segment === undefined || typeof value !== 'object' || value === null) return value;
  const container = value as Record<string, unknown>;
  const keys = segment === '*' ? Object.keys(container) : Object.hasOwn(container, segment) ? [segment] : [];
  let copy: Record<string, unknown> | unknown[] | undefined;
  for (const key of keys) {
    const before = container[key];
    const after = depth === path.length - 1 ? CENSOR : redactPath(before, path, depth + 1);
    if (after === before) continue;
    copy ??= Array.isArray(value) ? [...value] : { ...container };
    (copy as Record<string, unknown>)[key] = after;
  }
  return copy ?? value;
}
