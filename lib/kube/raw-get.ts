import type { KubeContext } from './kube-context.ts';
import { attemptSignal, sendOnce } from './kube-http.ts';

/** An API server answer as it came over the wire. */
export interface RawResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

/**
 * GETs `path` from the context's API server and returns the bytes
 * unparsed: for answers passed on as the API server wrote them (the kubelet
 * API's `/pods` is the API server's PodList of the node), which a typed
 * client would re-encode differently (Dates are written with milliseconds).
 * One attempt over the context's connections and credentials (a second
 * after a 401 when the context's source holds newer credentials, as the
 * typed clients do), aborted after `timeoutMs`.
 */
export async function rawGet(context: KubeContext, path: string, timeoutMs: number): Promise<RawResponse> {
  const { signal, done } = attemptSignal(timeoutMs);
  try {
    const answer = await context.sendRenewing(
      () => sendOnce(context, { method: 'GET', path }, signal),
      (a) => a.status,
    );
    return {
      status: answer.status,
      contentType: String(answer.headers['content-type'] ?? ''),
      body: answer.body,
    };
  } finally {
    done();
  }
}
