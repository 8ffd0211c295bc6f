import type { IncomingHttpHeaders } from 'node:http';

/** One Kubernetes API request and its answer, as the HTTP layer (kube-http.ts) and its retries (retrying-http.ts) pass them. */

/** Query parameters; undefined ones are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The API path, e.g. `/api/v1/namespaces/default/pods/web`. */
  path: string;
  query?: Query;
  /** Sent as JSON; a string is sent as it is (encoded already). */
  body?: unknown;
  /** Of the body; default application/json (a patch names its strategy). */
  contentType?: string;
  headers?: Record<string, string>;
}

/** An answer as it came over the wire (decompressed). */
export interface KubeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** `GET /api/v1/nodes/x`: how a request is named in errors. */
export function describeRequest(request: Pick<KubeRequest, 'method' | 'path'>): string {
  return `${request.method} ${request.path}`;
}
