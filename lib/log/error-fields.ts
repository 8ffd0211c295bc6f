import { apiErrorFields } from '../kube/api-error-message.ts';

/**
 * How an error is written into a log line (the `err` field): a Kubernetes
 * API error as its type, HTTP status, reason and message, and nothing else
 * (client-node's errors carry the whole response body and headers, and
 * their message repeats both); any other error as its type, message, stack
 * and own properties (an AWS SDK error's `$metadata`, a Node error's
 * `code`), its cause written the same way.
 */
export function errorFields(err: unknown, depth = 0): unknown {
  const type = err instanceof Error ? typeName(err) : 'Status';
  const api = apiErrorFields(err);
  if (api) return { type, ...api };
  if (!(err instanceof Error)) return err;
  const own = Object.fromEntries(Object.entries(err).filter(([key]) => key !== 'cause'));
  return {
    type,
    message: err.message,
    ...own,
    stack: err.stack,
    ...(err.cause !== undefined && depth < 3 ? { cause: errorFields(err.cause, depth + 1) } : {}),
  };
}

/** `name`, or the class name for errors that leave `name` at "Error" (client-node's ApiException). */
function typeName(err: Error): string {
  return err.name === 'Error' && err.constructor.name ? err.constructor.name : err.name;
}
