import { randomUUID, X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Context } from 'aws-lambda';
import { isStreamingHandler } from '../response-streaming.ts';
import { createLambdaContext } from './lambda-context.ts';
import { LocalResponseStream } from './local-response-stream.ts';

/**
 * The kubelet API's local front, a kubelet's TLS listener in front of the
 * kubelet-api function: an HTTPS server on each node's own address that asks
 * for a client certificate, as a kubelet does (`tls.RequestClientCert`), and
 * hands the exported streaming handler the REST API proxy event API Gateway
 * would, with the certificate in `requestContext.identity.clientCert` only
 * when it chains to the trusted CA. So the handler authenticates as a
 * kubelet does: a verified certificate, else a bearer token (TokenReview),
 * else 401, the kubelet's answer to no certificate and to a certificate of
 * another CA alike. (API Gateway's mutual TLS refuses both before the
 * function runs.) The handler runs in this process; its streamed response
 * (prelude, then body) becomes the HTTP response.
 */
/** A streaming Lambda handler as `awslambda.streamifyResponse` makes it. */
export type StreamingLambdaHandler = (
  event: never,
  responseStream: never,
  context: Context,
) => Promise<unknown>;

export interface KubeletApiFrontOptions {
  handler: StreamingLambdaHandler;
  /** The addresses to listen on, one per node (all on one port). */
  addresses: readonly string[];
  /** The port; 0 picks a free one (on the first address, then shared by all). */
  port?: number;
  /** PEM of the CA(s) client certificates must chain to: the front's truststore. */
  clientCa: string;
  /**
   * The API id and stage this front puts in `requestContext`, as API Gateway
   * names its REST API and stage: the function serves only the ones it is
   * configured with (SVK_KUBELET_API_ID, SVK_KUBELET_API_STAGE).
   */
  source: { apiId: string; stage: string };
  /** The serving certificate and key (PEM). */
  serving: { cert: string; key: string };
  /** The function's timeout: the longest one request may take. */
  timeoutMs?: number;
  functionName?: string;
  /**
   * Serves upgrade requests (exec, attach, port-forward), which API Gateway
   * could not carry: handed the same proxy event as the handler, with the
   * connection itself. Without it, they reach the handler like any request.
   */
  upgrade?: UpgradeHandler;
}

/** Serves one upgrade request, handed the proxy event the handler would get for it. */
export type UpgradeHandler = (
  event: unknown,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
) => Promise<void>;

export interface KubeletApiFront {
  port: number;
  stop(): Promise<void>;
}

/** Starts one listener per address and resolves once all listen. */
export async function startKubeletApiFront(options: KubeletApiFrontOptions): Promise<KubeletApiFront> {
  if (!isStreamingHandler(options.handler)) {
    throw new Error('the kubelet API front needs a streaming handler (awslambda.streamifyResponse)');
  }
  const servers: Server[] = [];
  let port = options.port ?? 0;
  try {
    for (const address of options.addresses) {
      const server = createServer(
        {
          cert: options.serving.cert,
          key: options.serving.key,
          ca: options.clientCa,
          requestCert: true,
          rejectUnauthorized: false,
        },
        (req, res) => void serve(req, res, options),
      );
      const { upgrade } = options;
      if (upgrade)
        server.on(
          'upgrade',
          (req: IncomingMessage, socket: Duplex, head: Buffer) =>
            void upgradeOne(req, socket, head, upgrade, options.source),
        );
      servers.push(server);
      port = await listen(server, address, port);
    }
  } catch (err) {
    await Promise.all(servers.map(close));
    throw err;
  }
  return { port, stop: () => Promise.all(servers.map(close)).then(() => undefined) };
}

function listen(server: Server, address: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      const bound = server.address();
      resolve(typeof bound === 'object' && bound ? bound.port : port);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  options: KubeletApiFrontOptions,
): Promise<void> {
  const socket = req.socket as TLSSocket;
  const peer = socket.authorized ? socket.getPeerCertificate(true) : undefined;
  const cert = peer?.raw ? new X509Certificate(peer.raw) : undefined;
  const controller = new AbortController();
  res.on('close', () => controller.abort(new Error('the client closed the connection')));
  const stream = new LocalResponseStream(res);
  const context = createLambdaContext({
    functionName: options.functionName ?? 'kubelet-api',
    timeoutMs: options.timeoutMs ?? 900_000,
    signal: controller.signal,
  });
  try {
    await options.handler(proxyEvent(req, cert, options.source) as never, stream as never, context);
  } catch (err) {
    // A handler that throws is an invocation error: API Gateway answers 502 when nothing was sent yet.
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(res.headersSent ? undefined : JSON.stringify({ message: 'Internal server error' }));
    process.emitWarning(`kubelet API handler failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function upgradeOne(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  upgrade: UpgradeHandler,
  source: KubeletApiFrontOptions['source'],
): Promise<void> {
  // As for any request: a verified certificate goes to the handler, which also takes bearer tokens.
  const tls = req.socket as TLSSocket;
  const peer = tls.authorized ? tls.getPeerCertificate(true) : undefined;
  const cert = peer?.raw ? new X509Certificate(peer.raw) : undefined;
  try {
    await upgrade(proxyEvent(req, cert, source), req, socket, head);
  } catch (err) {
    socket.destroy();
    process.emitWarning(`kubelet API upgrade failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The REST API proxy event (`AWS_PROXY`, resource `/{proxy+}`) API Gateway
 * sends for `req`, with `X-Forwarded-Port` set to the port reached, as API
 * Gateway sets it (nodes that share an address have ports of their own).
 */
function proxyEvent(
  req: IncomingMessage,
  cert: X509Certificate | undefined,
  source: KubeletApiFrontOptions['source'],
): unknown {
  const url = new URL(req.url ?? '/', 'https://front.invalid');
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const [name = '', value = ''] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
    if (name.toLowerCase() === 'x-forwarded-port') continue;
    headers[name] = value;
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value];
  }
  const port = String(req.socket.localPort ?? '');
  headers['X-Forwarded-Port'] = port;
  multiValueHeaders['X-Forwarded-Port'] = [port];
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [key, value] of url.searchParams) {
    query[key] = value;
    multiQuery[key] = [...(multiQuery[key] ?? []), value];
  }
  const hasQuery = Object.keys(query).length > 0;
  const requestId = randomUUID();
  return {
    resource: '/{proxy+}',
    path: url.pathname,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: { proxy: url.pathname.slice(1) },
    stageVariables: null,
    requestContext: {
      resourcePath: '/{proxy+}',
      httpMethod: req.method ?? 'GET',
      path: url.pathname,
      requestId,
      apiId: source.apiId,
      stage: source.stage,
      // The node's own address the client connected to, as API Gateway names the custom domain it
      // served. The Host header stays as sent: kube-apiserver's node proxy sends its own.
      domainName: req.socket.localAddress ?? '',
      requestTimeEpoch: Date.now(),
      protocol: `HTTP/${req.httpVersion}`,
      identity: {
        sourceIp: req.socket.remoteAddress ?? '',
        userAgent: req.headers['user-agent'] ?? '',
        clientCert: cert
          ? {
              clientCertPem: cert.toString(),
              subjectDN: cert.subject.replaceAll('\n', ','),
              issuerDN: cert.issuer.replaceAll('\n', ','),
              serialNumber: cert.serialNumber,
              validity: { notBefore: cert.validFrom, notAfter: cert.validTo },
            }
          : null,
      },
    },
    body: null,
    isBase64Encoded: false,
  };
}
