import { errorMessage } from '../util/error-message.ts';
import { apiStatusCode } from './client.ts';

/**
 * A one-line reason for a failed Kubernetes request, short enough for a node
 * condition: `HTTP <code>: <message>` with the API server's own message when it
 * answered with a Status, `HTTP <code>` when it answered with something else,
 * and the first line of the error otherwise (client-node's messages run on
 * with headers and body).
 */
export function apiErrorMessage(err: unknown): string {
  const code = apiStatusCode(err);
  if (code === undefined) return errorMessage(err).split('\n')[0] ?? '';
  const message = statusMessage(err);
  return message === undefined ? `HTTP ${code}` : `HTTP ${code}: ${message}`;
}

/** The `message` of the Status in an API error's body (a JSON string or an object), if there is one. */
function statusMessage(err: unknown): string | undefined {
  const body = typeof err === 'object' && err !== null && 'body' in err ? err.body : undefined;
  let status: unknown = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (typeof status !== 'object' || status === null || !('message' in status)) return undefined;
  return typeof status.message === 'string' ? status.message : undefined;
}
