import * as z from 'zod';

/**
 * One request to the kubelet API, read from the API Gateway REST API proxy
 * event (`AWS_PROXY` integration) that both fronts hand the function: API
 * Gateway with mutual TLS in AWS, the loopback HTTPS server locally
 * (lib/local/kubelet-api-front.ts).
 */
export interface KubeletApiRequest {
  method: string;
  /** The URL path, e.g. `/containerLogs/default/web/main`. */
  path: string;
  /**
   * The name the client connected to, lower-case, without port: it names the
   * node asked. API Gateway's `requestContext.domainName` (the custom domain
   * name it served, which it matched on the Host header), else the Host
   * header.
   */
  host: string;
  /**
   * The port the client connected to, from the `X-Forwarded-Port` header
   * API Gateway and the local front set: it tells apart nodes that share an
   * address.
   */
  port?: number;
  /** Every value of every query parameter. */
  query: Readonly<Record<string, readonly string[]>>;
  /** The client certificate (PEM) the front verified during the TLS handshake, if any. */
  clientCertPem?: string;
  /** The bearer token of an `Authorization: Bearer` header, if any. */
  bearerToken?: string;
  /** API Gateway's (or the front's) request id, for the logs. */
  requestId?: string;
  /**
   * The REST API and stage that say they sent the event
   * (`requestContext.apiId`, `requestContext.stage`): only our own front's
   * are served (see checkSource in serve.ts).
   */
  apiId?: string;
  stage?: string;
}

/** The event is not an API Gateway REST API proxy event we can serve. */
export class KubeletApiEventError extends Error {
  override readonly name = 'KubeletApiEventError';
}

export function isKubeletApiEventError(err: unknown): err is KubeletApiEventError {
  return err instanceof KubeletApiEventError;
}

const stringMap = z.record(z.string(), z.string()).nullish();
const multiMap = z.record(z.string(), z.array(z.string())).nullish();

const eventSchema = z.object({
  httpMethod: z.string().min(1),
  path: z.string().startsWith('/'),
  headers: stringMap,
  multiValueHeaders: multiMap,
  queryStringParameters: stringMap,
  multiValueQueryStringParameters: multiMap,
  requestContext: z.object({
    requestId: z.string().optional(),
    apiId: z.string().optional(),
    stage: z.string().optional(),
    domainName: z.string().optional(),
    identity: z
      .object({ clientCert: z.object({ clientCertPem: z.string() }).nullish() })
      .partial()
      .optional(),
  }),
});

/**
 * Reads a REST API proxy event.
 * @throws KubeletApiEventError naming what is missing or malformed.
 */
export function parseKubeletApiEvent(event: unknown): KubeletApiRequest {
  const parsed = eventSchema.safeParse(event);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'event'}: ${i.message}`);
    throw new KubeletApiEventError(`not an API Gateway REST API proxy event (${issues.join('; ')})`);
  }
  const e = parsed.data;
  const headers = Object.fromEntries(Object.entries(e.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const rawHost = e.requestContext.domainName || headers.host;
  if (!rawHost) throw new KubeletApiEventError('the request has no Host header: the node asked is unknown');
  const query: Record<string, string[]> = {};
  for (const [key, value] of Object.entries(e.queryStringParameters ?? {})) query[key] = [value];
  for (const [key, values] of Object.entries(e.multiValueQueryStringParameters ?? {})) query[key] = values;
  const authorization = headers.authorization ?? '';
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
  const pem = e.requestContext.identity?.clientCert?.clientCertPem;
  const port = /^\d{1,5}$/.test(headers['x-forwarded-port'] ?? '') ? Number(headers['x-forwarded-port']) : 0;
  return {
    method: e.httpMethod.toUpperCase(),
    path: e.path,
    host: hostWithoutPort(rawHost),
    ...(port > 0 && port < 65536 ? { port } : {}),
    query,
    ...(pem ? { clientCertPem: pem } : {}),
    ...(bearer ? { bearerToken: bearer } : {}),
    ...(e.requestContext.requestId ? { requestId: e.requestContext.requestId } : {}),
    ...(e.requestContext.apiId ? { apiId: e.requestContext.apiId } : {}),
    ...(e.requestContext.stage ? { stage: e.requestContext.stage } : {}),
  };
}

/** `node-a.example.com:443` → `node-a.example.com`; `[::1]:10250` → `::1`. */
export function hostWithoutPort(host: string): string {
  const trimmed = host.trim().toLowerCase();
  if (trimmed.startsWith('[')) return trimmed.slice(1, trimmed.indexOf(']'));
  const colon = trimmed.lastIndexOf(':');
  return colon >= 0 && trimmed.indexOf(':') === colon ? trimmed.slice(0, colon) : trimmed;
}
