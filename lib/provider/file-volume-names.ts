/**
 * The names a file volume may write (the kubelet's atomic writer's
 * validatePath) and the keys it may read (the API's IsConfigMapKey): checked
 * before anything is written, each problem worded for the field it names.
 */

const MAX_PATH_LENGTH = 4096;
const MAX_FILE_NAME_LENGTH = 255;

/**
 * What is wrong with a path a volume writes a file at (the atomic writer's
 * validatePath): empty, absolute, with a `..` element, starting with `..`,
 * longer than 4096 characters or with a name longer than 255; undefined when
 * it is fine.
 */
export function filePathProblem(path: string | undefined): string | undefined {
  if (!path) return 'must not be empty';
  if (path.startsWith('/')) return `must be a relative path, not "${path}"`;
  if (path.length > MAX_PATH_LENGTH) return `must be at most ${MAX_PATH_LENGTH} characters`;
  const parts = path.split('/');
  if (parts.includes('..')) return `must not contain a ".." element: "${path}"`;
  if (parts.some((p) => p.length > MAX_FILE_NAME_LENGTH))
    return `file names must be at most ${MAX_FILE_NAME_LENGTH} characters`;
  if ((parts[0] ?? '').startsWith('..')) return `must not start with "..": "${path}"`;
  if (parts.some((p) => p === '')) return `must not have an empty element: "${path}"`;
  return undefined;
}

/** What is wrong with a ConfigMap or Secret key (the API's IsConfigMapKey); undefined when it is fine. */
export function configKeyProblem(key: string | undefined): string | undefined {
  if (!key) return 'must not be empty';
  if (key.length > 253) return 'must be at most 253 characters';
  if (!/^[-._a-zA-Z0-9]+$/.test(key))
    return `"${key}" is not a valid key (letters, digits, "-", "_" and ".")`;
  if (key === '.' || key === '..' || key.startsWith('..'))
    return `"${key}" must not be "." or start with ".."`;
  return undefined;
}
