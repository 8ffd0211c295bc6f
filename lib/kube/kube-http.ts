import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { currentDeadline } from '../deadline.ts';
import type { KubeContext } from './kube-context.ts';
import { KubeApiError, KubeRequestError } from './kube-errors.ts';
import { describeRequest, type KubeRequest, type KubeResponse } from './kube-request.ts';
import { type KubeRetryOptions, retrying } from './retrying-http.ts';

/**
 * The one HTTP layer under every Kubernetes request of the functions: the
 * typed clients (core-api.ts, group-apis.ts), watches (watch.ts) and the raw
 * reads of the kubelet API (raw-get.ts), all over the context's kept-alive
 * connections (keep-alive.ts).
 */

/**
 * Opens a request on `context`'s connections and resolves with the response
 * as soon as its headers arrived (the body still to read). Rejects with a
 * KubeRequestError when there is no answer, `signal` included.
 */
export async function openRequest(
  context: KubeContext,
  request: KubeRequest,
  signal: AbortSignal,
  options: { acceptGzip?: boolean } = {},
): Promise<IncomingMessage> {
  const name = describeRequest(request);
  let connection: Awaited<ReturnType<KubeContext['connect']>>;
  try {
    connection = await context.connect();
  } catch (err) {
    throw new KubeRequestError(`${name}: credentials`, err);
  }
  const url = context.url(request.path, request.query);
  const { body } = request;
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const headers = lowerCaseKeys(
    {
      accept: 'application/json',
      ...(options.acceptGzip === false ? {} : { 'accept-encoding': 'gzip' }),
      ...(payload === undefined
        ? {}
        : {
            'content-type': request.contentType ?? 'application/json',
            'content-length': String(Buffer.byteLength(payload)),
          }),
    },
    connection.headers,
    request.headers,
  );
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new KubeRequestError(name, signal.reason));
      return;
    }
    const req = send(url, { method: request.method, agent: connection.agent, headers }, (res) => {
      signal.removeEventListener('abort', onAbort);
      resolve(res);
    });
    const onAbort = () => {
      req.destroy();
      reject(new KubeRequestError(name, signal.reason));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      reject(new KubeRequestError(name, err));
    });
    req.end(payload);
  });
}

/** The headers merged, later ones winning whatever the case of their names. */
function lowerCaseKeys(...all: Array<Record<string, string> | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const headers of all)
    for (const [key, value] of Object.entries(headers ?? {})) out[key.toLowerCase()] = value;
  return out;
}

/** The response's body stream, decompressed when the server compressed it. */
export function bodyStream(res: IncomingMessage): Readable {
  return res.headers['content-encoding'] === 'gzip' ? res.pipe(createGunzip()) : res;
}

/** One attempt: the request and its whole body, aborted by `signal`. */
export async function sendOnce(
  context: KubeContext,
  request: KubeRequest,
  signal: AbortSignal,
): Promise<KubeResponse> {
  const res = await openRequest(context, request, signal);
  const body = bodyStream(res);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onAbort = () => {
      res.destroy();
      reject(new KubeRequestError(describeRequest(request), signal.reason));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    body.on('data', (chunk: Buffer) => chunks.push(chunk));
    body.on('end', () => {
      signal.removeEventListener('abort', onAbort);
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
    });
    const fail = (err: unknown) => {
      signal.removeEventListener('abort', onAbort);
      reject(new KubeRequestError(describeRequest(request), err));
    };
    body.on('error', fail);
    // A connection lost mid-body closes the response without an end (a piped gunzip would wait).
    res.on('close', () => {
      if (!res.complete) fail(new Error('the connection closed before the answer was complete'));
    });
  });
}

/** The error for a response outside 2xx, with the Status the server answered (parsed when JSON). */
export function apiError(request: KubeRequest, response: KubeResponse): KubeApiError {
  const text = response.body.toString('utf8');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's HTML page): kept as text.
  }
  return new KubeApiError(response.status, body, describeRequest(request));
}

/** A signal aborted after `ms` or with `deadline`, and a `done` that disarms the timer. */
export function attemptSignal(ms: number, deadline?: AbortSignal): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')),
    ms,
  );
  const signal = deadline ? AbortSignal.any([controller.signal, deadline]) : controller.signal;
  return { signal, done: () => clearTimeout(timer) };
}

/**
 * Requests on one context with the clients' rules: each attempt aborted
 * after `requestTimeoutMs` or at the invocation's deadline (lib/deadline.ts),
 * "not now" answers retried (retrying-http.ts), a 401 sent once more when
 * the context's source holds newer credentials (credentials that rotate:
 * KubeContext.renewCredentials), and every attempt counted as it goes out.
 */
export class KubeHttp {
  #sent = 0;
  readonly #send: (request: KubeRequest) => Promise<KubeResponse>;

  constructor(
    readonly context: KubeContext,
    readonly requestTimeoutMs: number,
    retry: KubeRetryOptions = {},
  ) {
    const once = async (request: KubeRequest) => {
      const { signal, done } = attemptSignal(requestTimeoutMs, currentDeadline());
      this.#sent++;
      retry.onAttempt?.();
      try {
        return await sendOnce(context, request, signal);
      } finally {
        done();
      }
    };
    const attempt = (request: KubeRequest) =>
      context.sendRenewing(
        () => once(request),
        (response) => response.status,
      );
    this.#send = retrying(attempt, retry);
  }

  /** Attempts sent so far (a failed, timed-out or retried one counts each time). */
  requests(): number {
    return this.#sent;
  }

  /** The answer, whatever its status. */
  send(request: KubeRequest): Promise<KubeResponse> {
    return this.#send(request);
  }

  /** The answer's JSON; a status outside 2xx rejects with a KubeApiError. */
  async json<T>(request: KubeRequest): Promise<T> {
    const response = await this.#send(request);
    if (response.status < 200 || response.status > 299) throw apiError(request, response);
    return JSON.parse(response.body.toString('utf8')) as T;
  }
}
