import type { IncomingMessage } from 'node:http';
import type { KubeContext } from './kube-context.ts';
import { KubeApiError, KubeRequestError } from './kube-errors.ts';
import { bodyStream, openRequest } from './kube-http.ts';
import { describeRequest, type KubeRequest, type Query } from './kube-request.ts';

/** Query parameters of a watch request (`watch=true` is added). */
export type WatchQuery = Query;

/** TCP keep-alive probes on a watch's connection: a watch may be silent for a minute between bookmarks. */
const WATCH_TCP_KEEPALIVE_MS = 30_000;

/**
 * Streams one watch request on `path` (e.g. `/api/v1/pods`), calling
 * `onEvent` synchronously and in order for each event (`ADDED`, `MODIFIED`,
 * `DELETED`, `BOOKMARK`, or `ERROR` with a Status object), the object as
 * parsed JSON (dates are strings here). Resolves when the server ends the
 * stream (at `timeoutSeconds`) or `signal` aborts; no event is delivered
 * after that. Rejects when the request fails: apiStatusCode() of the error
 * is the HTTP status when the server refused the watch (a KubeApiError with
 * the server's Status), and a connection lost mid-stream is a
 * KubeRequestError. `onOpen` is called once the server accepted the watch
 * (its response began), before any event. The request goes over the
 * context's kept-alive connections with its credentials, without the typed
 * clients' timeout and retries (the caller's signal bounds it), but sent once
 * more after a 401 when the context's source holds newer credentials.
 */
export function watchStream(
  context: KubeContext,
  path: string,
  query: WatchQuery,
  onEvent: (type: string, object: unknown) => void,
  signal: AbortSignal,
  options: { onOpen?: () => void } = {},
): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  const request: KubeRequest = { method: 'GET', path, query: { ...query, watch: true } };
  // A 401 opens it once more when the context's source holds newer credentials (sendRenewing).
  const opened = context.sendRenewing(
    () => openRequest(context, request, signal, { acceptGzip: false }),
    (res) => (signal.aborted ? undefined : res.statusCode),
    (res) => res.destroy(),
  );
  return opened.then(
    (res) => {
      if (signal.aborted) {
        res.destroy();
        return undefined;
      }
      if (res.statusCode !== 200) return refused(res, request);
      res.socket?.setKeepAlive(true, WATCH_TCP_KEEPALIVE_MS);
      options.onOpen?.();
      return stream(res, request, onEvent, signal);
    },
    (err: unknown) => {
      // Aborting is our stop, not a failure.
      if (signal.aborted) return undefined;
      throw err;
    },
  );
}

/** Reads a refused watch's answer (the server's Status) into the error. */
async function refused(res: IncomingMessage, request: KubeRequest): Promise<never> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of bodyStream(res)) chunks.push(chunk as Buffer);
  } catch {
    // The status is what matters; the body only adds the server's words.
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: kept as text.
  }
  throw new KubeApiError(res.statusCode ?? 0, body, describeRequest(request));
}

function stream(
  res: IncomingMessage,
  request: KubeRequest,
  onEvent: (type: string, object: unknown) => void,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let partial = '';
    const settle = (err?: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      res.destroy();
      if (err !== undefined && !signal.aborted) reject(new KubeRequestError(describeRequest(request), err));
      else resolve();
    };
    const onAbort = () => settle();
    if (signal.aborted) {
      // Aborted already (by onOpen, say): nothing is delivered.
      settle();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    const body = bodyStream(res);
    body.setEncoding('utf8');
    body.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (settled) return;
        const event = parseLine(line);
        if (event) onEvent(event.type, event.object);
      }
    });
    body.on('end', () => {
      const event = parseLine(partial);
      if (event && !settled) onEvent(event.type, event.object);
      settle();
    });
    body.on('error', (err) => settle(err));
    res.on('close', () => {
      if (!res.complete) settle(new Error('the connection closed before the watch ended'));
    });
  });
}

/** One event line; lines that are not an event are skipped, as client-node's Watch skips them. */
function parseLine(line: string): { type: string; object: unknown } | undefined {
  if (line.trim() === '') return undefined;
  try {
    const parsed = JSON.parse(line) as { type?: unknown; object?: unknown };
    return typeof parsed.type === 'string' ? { type: parsed.type, object: parsed.object } : undefined;
  } catch {
    return undefined;
  }
}
