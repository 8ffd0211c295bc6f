import { errorMessage } from '../util/error-message.ts';
import { apiStatusCode } from './client.ts';

/**
 * A one-line reason for a failed request, short enough for a node condition:
 * `HTTP <code>: <message>` with the server's own message when its answer
 * carries one (the API server's Status, a Docker or Podman engine's
 * `{"message": ...}` body), `HTTP <code>` when it answered with something
 * else, and the first line of the error otherwise (client-node's messages run
 * on with headers and body).
 */
export function apiErrorMessage(err: unknown): string {
  const code = apiStatusCode(err);
  if (code === undefined) return errorMessage(err).split('\n')[0] ?? '';
  const message = statusOf(err)?.message;
  return typeof message === 'string' ? `HTTP ${code}: ${message}` : `HTTP ${code}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The Status the server answered with: the error itself when it is one (a
 * watch's ERROR event), else the error's body (a JSON string or an object):
 * client-node's `body`, or dockerode's `json` (the engine's answer, parsed,
 * whose `message` is the engine's own words: Podman's HTTP 500s say nothing
 * without it).
 */
function statusOf(err: unknown): Record<string, unknown> | undefined {
  if (!isRecord(err)) return undefined;
  if (err.kind === 'Status') return err;
  let body = err.body ?? err.json;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return isRecord(body) ? body : undefined;
}

/** Longest message kept in a log field: an API server message is a sentence, a body can be anything. */
const MAX_MESSAGE = 300;

/**
 * A failed Kubernetes request in a few short fields for a log line: the
 * HTTP status, the Status's reason (`Forbidden`, `NotFound`, ...) and its
 * message; undefined when `err` is not an API error. Never the client's
 * error object, whose message repeats the body and the headers.
 */
export function apiErrorFields(
  err: unknown,
): { status: number; reason?: string; message: string } | undefined {
  const code = apiStatusCode(err);
  if (code === undefined) return undefined;
  const status = statusOf(err);
  const reason = typeof status?.reason === 'string' ? status.reason : undefined;
  const message = typeof status?.message === 'string' ? status.message : `HTTP ${code}`;
  return {
    status: code,
    ...(reason ? { reason } : {}),
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message,
  };
}

/**
 * The API server refused a write because its namespace is being deleted
 * (403 with the NamespaceTerminating cause) or is gone (404 on the
 * namespace): expected while a namespace is torn down, not a fault.
 */
export function isNamespaceGoing(err: unknown): boolean {
  const code = apiStatusCode(err);
  const status = statusOf(err);
  const details = isRecord(status?.details) ? status.details : undefined;
  const causes = Array.isArray(details?.causes) ? details.causes : [];
  const terminating =
    causes.some((c) => isRecord(c) && c.type === 'NamespaceTerminating') ||
    (typeof status?.message === 'string' && status.message.includes('because it is being terminated'));
  return (code === 403 && terminating) || (code === 404 && details?.kind === 'namespaces');
}
