import { Readable } from 'node:stream';
import {
  isKubeletApiEventError,
  type KubeletApiRequest,
  parseKubeletApiEvent,
} from './kubelet-api-request.ts';
import { textResponse } from './responses.ts';
import { type KubeletApiDependencies, serveKubeletApi } from './serve.ts';

export { KubeletApiConfigError, kubeletApiDependencies } from './kubelet-api-dependencies.ts';

/** What middy's streamify execution mode writes: metadata, then the body as a string or a byte stream. */
export interface StreamedResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string | Readable;
}

/** The invocation a request is served in. */
export interface KubeletApiInvocation {
  /** Aborts when the client goes away or the invocation ends. */
  signal: AbortSignal;
  /** The Lambda request id, which every log line of the invocation carries (`function_request_id`). */
  requestId: string;
}

/**
 * One API Gateway event: a malformed event is answered 400 naming what is
 * wrong; an unexpected failure is logged and answered 500 with the request
 * id that finds its log line, never the error's own text (it may name hosts,
 * ARNs, or what the API server said), and never a hung request.
 */
export async function kubeletApi(
  event: unknown,
  deps: KubeletApiDependencies,
  invocation: KubeletApiInvocation,
): Promise<StreamedResponse> {
  let response: Awaited<ReturnType<typeof serveKubeletApi>>;
  let request: KubeletApiRequest | undefined;
  try {
    request = parseKubeletApiEvent(event);
    response = await serveKubeletApi(request, deps, invocation.signal);
  } catch (err) {
    if (isKubeletApiEventError(err)) response = textResponse(400, err.message);
    else {
      deps.log.error(
        { err, ...(request?.requestId ? { api_request_id: request.requestId } : {}), path: request?.path },
        'kubelet API request failed',
      );
      response = textResponse(
        500,
        `internal error (request id ${invocation.requestId}): see the kubelet API function's log`,
      );
    }
  }
  const { body } = response;
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    body: typeof body === 'string' ? body : Readable.from(body, { objectMode: false }),
  };
}
