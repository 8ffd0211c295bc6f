import { Readable } from 'node:stream';
import { isKubeletApiEventError, parseKubeletApiEvent } from './kubelet-api-request.ts';
import { textResponse } from './responses.ts';
import { type KubeletApiDependencies, serveKubeletApi } from './serve.ts';

export { KubeletApiConfigError, kubeletApiDependencies } from './kubelet-api-dependencies.ts';

/** What middy's streamify execution mode writes: metadata, then the body as a string or a byte stream. */
export interface StreamedResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string | Readable;
}

/**
 * One API Gateway event: a malformed event is answered 400 naming what is
 * wrong, an unexpected failure 500 (and logged), never a hung request.
 */
export async function kubeletApi(
  event: unknown,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<StreamedResponse> {
  let response: Awaited<ReturnType<typeof serveKubeletApi>>;
  try {
    response = await serveKubeletApi(parseKubeletApiEvent(event), deps, signal);
  } catch (err) {
    if (isKubeletApiEventError(err)) response = textResponse(400, err.message);
    else {
      deps.log.error({ err }, 'kubelet API request failed');
      response = textResponse(500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const { body } = response;
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    body: typeof body === 'string' ? body : Readable.from(body, { objectMode: false }),
  };
}
