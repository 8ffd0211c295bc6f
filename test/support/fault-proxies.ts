/**
 * Proxies on loopback that put a fault between the functions and a real
 * component, for the fault scenarios (test/integration/faults.test.ts) and
 * the fault matrix (bench/faults.ts). The code under test only sees another
 * endpoint; what answers is still the real component, or, for a refused
 * DynamoDB request, the error DynamoDB documents for it, so that the AWS
 * SDK's own retry code handles it.
 */
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
} from 'node:http';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy that holds every chunk `delayMs` before passing it on, in
 * both directions, in order: a slow network to the component behind it
 * (a TLS handshake pays the delay on each of its flights). `delayMs` may
 * change while connections are open; 0 passes chunks on at once.
 */
export interface DelayProxy {
  /** `127.0.0.1:<port>`. */
  address: string;
  port: number;
  delayMs: number;
  /** Connections accepted so far. */
  connections: number;
  /** Resets every open connection (both sides), as a load balancer that drops its connections does. */
  resetConnections(): void;
  stop(): Promise<void>;
}

/** Starts a {@link DelayProxy} in front of `target` (host and port). */
export async function startDelayProxy(target: { host: string; port: number }): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const proxy: DelayProxy = {
    address: '',
    port: 0,
    delayMs: 0,
    connections: 0,
    resetConnections: () => {
      for (const s of sockets) s.resetAndDestroy();
    },
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  // Each direction's chunks leave in arrival order, each no earlier than its arrival plus the delay.
  const pipeDelayed = (from: Socket, to: Socket) => {
    let chain = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      const due = Date.now() + proxy.delayMs;
      chain = chain.then(async () => {
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (!to.destroyed) to.write(chunk);
      });
    });
    from.on('end', () => {
      chain = chain.then(() => {
        to.end();
      });
    });
  };
  const server = createServer((client) => {
    proxy.connections++;
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    // A component that is down resets the client's connection, as a load balancer in front of it would.
    upstream.on('error', () => client.resetAndDestroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    pipeDelayed(client, upstream);
    pipeDelayed(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.port = (server.address() as AddressInfo).port;
  proxy.address = `127.0.0.1:${proxy.port}`;
  return proxy;
}

/** A DynamoDB refusal: the error type (the part after `#` of `__type`) and, for a cancelled transaction, its reasons. */
export interface DynamoRefusal {
  status: number;
  type: string;
  message: string;
  cancellationReasons?: { Code: string; Message?: string }[];
}

/** What {@link DynamoFaultProxy.refuse} is asked about each request. */
export interface DynamoRequest {
  /** `PutItem`, `TransactWriteItems`... from X-Amz-Target. */
  operation: string;
  /** The request's JSON body. */
  body: Record<string, unknown>;
}

export interface DynamoFaultProxy {
  endpoint: string;
  /** Decides, per request, whether the proxy answers it with a refusal instead of forwarding it. */
  refuse: ((request: DynamoRequest) => DynamoRefusal | undefined) | undefined;
  /** Told of each forwarded request with the status DynamoDB Local answered it with (200: done). */
  observe: ((request: DynamoRequest, status: number) => void) | undefined;
  /** Requests forwarded and refused so far, by operation. */
  forwarded: Map<string, number>;
  refused: Map<string, number>;
  stop(): Promise<void>;
}

/** DynamoDB's throttling error for on-demand and provisioned tables alike (the SDK retries both). */
export function throttled(type = 'ProvisionedThroughputExceededException'): DynamoRefusal {
  const namespace =
    type === 'ThrottlingException' ? 'com.amazon.coral.availability' : 'com.amazonaws.dynamodb.v20120810';
  return {
    status: 400,
    type: `${namespace}#${type}`,
    message:
      type === 'ThrottlingException'
        ? 'Rate of requests exceeds the allowed throughput.'
        : 'The level of configured provisioned throughput for the table was exceeded.',
  };
}

/**
 * DynamoDB's answer to a write that collides with a transaction in progress
 * on the same item: `TransactionCanceledException` with a
 * `TransactionConflict` reason for a transaction (one reason per item, the
 * others `None`), `TransactionConflictException` for a single-item write.
 * The SDK retries neither: the caller sees it.
 */
export function transactionConflict(request: DynamoRequest): DynamoRefusal {
  if (request.operation === 'TransactWriteItems') {
    const items = Array.isArray(request.body.TransactItems) ? request.body.TransactItems.length : 1;
    return {
      status: 400,
      type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      message:
        'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]',
      cancellationReasons: Array.from({ length: items }, (_, i) =>
        i === 0
          ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
          : { Code: 'None' },
      ),
    };
  }
  return {
    status: 400,
    type: 'com.amazonaws.dynamodb.v20120810#TransactionConflictException',
    message: 'Transaction is ongoing for the item',
  };
}

/** Writes DynamoDB takes part in transactions with: the single-item ones and transactions. */
export const WRITE_OPERATIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems']);

/** Starts a {@link DynamoFaultProxy} on a free loopback port, forwarding to `target` (http://host:port). */
export async function startDynamoFaultProxy(target: string): Promise<DynamoFaultProxy> {
  const upstream = new URL(target);
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const requestBody = Buffer.concat(chunks);
      const amzTarget = String(req.headers['x-amz-target'] ?? '');
      const operation = amzTarget.slice(amzTarget.indexOf('.') + 1);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(requestBody.toString('utf8')) as Record<string, unknown>;
      } catch {
        // Not JSON: forwarded as it is, DynamoDB Local answers.
      }
      const refusal = proxy.refuse?.({ operation, body });
      if (refusal) {
        bump(proxy.refused, operation);
        res.writeHead(refusal.status, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(
          JSON.stringify({
            __type: refusal.type,
            message: refusal.message,
            ...(refusal.cancellationReasons ? { CancellationReasons: refusal.cancellationReasons } : {}),
          }),
        );
        return;
      }
      bump(proxy.forwarded, operation);
      const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (answer) => {
          proxy.observe?.({ operation, body }, answer.statusCode ?? 502);
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('error', () => res.destroy());
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(requestBody);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const proxy: DynamoFaultProxy = {
    endpoint: `http://127.0.0.1:${port}`,
    refuse: undefined,
    observe: undefined,
    forwarded: new Map(),
    refused: new Map(),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return proxy;
}

/**
 * Refuses a share `rate` of the requests `filter` selects, with `answer`,
 * drawn from a seeded generator: the same sequence on every run, and no
 * lockstep with the callers' own fixed sequences of requests (refusing
 * exactly every other write would refuse the same write of a fixed
 * sequence every time).
 */
export function refuseAtRate(
  rate: number,
  answer: (request: DynamoRequest) => DynamoRefusal | undefined,
  options: { filter?: (request: DynamoRequest) => boolean; seed?: number } = {},
): (request: DynamoRequest) => DynamoRefusal | undefined {
  // mulberry32: small, fast, and good enough to spread refusals.
  let state = options.seed ?? 0x5eed;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return (request) => {
    if (options.filter && !options.filter(request)) return undefined;
    return random() < rate ? answer(request) : undefined;
  };
}
