/** What the kubelet API answers: a status, headers, and a body that may stream. */
export interface KubeletApiResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string | AsyncIterable<Uint8Array>;
}

const TEXT = 'text/plain; charset=utf-8';

/** A plain-text answer, as the kubelet writes its errors (`response.WriteError`). */
export function textResponse(statusCode: number, text: string, contentType = TEXT): KubeletApiResponse {
  return {
    statusCode,
    headers: { 'content-type': contentType },
    body: text.endsWith('\n') ? text : `${text}\n`,
  };
}

export function jsonResponse(statusCode: number, value: unknown): KubeletApiResponse {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}

/**
 * A `metav1.Status` failure: what client-go decodes and shows when an
 * upgrade (exec, attach, port-forward) is answered without `101`.
 */
export function statusResponse(code: number, reason: string, message: string): KubeletApiResponse {
  return jsonResponse(code, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  });
}

/** metav1.Time's JSON form: RFC 3339 in whole seconds. */
export function metaTime(at: Date | number): string {
  return new Date(Math.floor(new Date(at).getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
