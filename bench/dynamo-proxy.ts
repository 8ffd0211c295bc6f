/**
 * A counting proxy in front of DynamoDB Local, for the benchmarks: every
 * request the functions send goes through it unchanged, and it records the
 * operation with the request units DynamoDB on-demand would bill for it
 * (from the request and response bodies: item sizes, transaction items,
 * consistent or eventually consistent reads). Measured from outside the code
 * under test, which only sees another endpoint.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DynamoCall {
  /** performance.now() of the request. */
  at: number;
  operation: string;
  writeUnits: number;
  readUnits: number;
}

export interface DynamoProxy {
  endpoint: string;
  calls: DynamoCall[];
  stop(): Promise<void>;
}

const KB = 1024;

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

/** The request units of one call, as DynamoDB on-demand bills them (item sizes approximated by their JSON). */
export function requestUnits(
  operation: string,
  request: unknown,
  responseBytes: number,
): { writeUnits: number; readUnits: number } {
  const body = record(request);
  const writeOf = (item: unknown) => Math.max(1, Math.ceil(JSON.stringify(item ?? {}).length / KB));
  const readOf = (consistent: boolean) =>
    (consistent ? 1 : 0.5) * Math.max(1, Math.ceil(responseBytes / (4 * KB)));
  switch (operation) {
    case 'PutItem':
      return { writeUnits: writeOf(body.Item), readUnits: 0 };
    case 'UpdateItem':
    case 'DeleteItem':
      // The item's size is what counts; updates and deletes here touch small items.
      return { writeUnits: 1, readUnits: 0 };
    case 'TransactWriteItems': {
      const items = Array.isArray(body.TransactItems) ? body.TransactItems : [];
      // Two units per item (condition checks included), each by the size of what it writes.
      const units = items.reduce((a: number, item) => {
        const put = record(record(item).Put).Item;
        return a + 2 * (put === undefined ? 1 : writeOf(put));
      }, 0);
      return { writeUnits: units, readUnits: 0 };
    }
    case 'GetItem':
    case 'Query':
      return { writeUnits: 0, readUnits: readOf(body.ConsistentRead === true) };
    default:
      // Table administration (CreateTable, DescribeTable): the benchmark's set-up.
      return { writeUnits: 0, readUnits: 0 };
  }
}

/** Starts the proxy on a free loopback port, forwarding to `target` (http://host:port). */
export async function startDynamoProxy(target: string): Promise<DynamoProxy> {
  const upstream = new URL(target);
  const calls: DynamoCall[] = [];
  const server = createServer((req, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const requestBody = Buffer.concat(chunks);
      const target = String(req.headers['x-amz-target'] ?? '');
      const operation = target.slice(target.indexOf('.') + 1);
      const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => body.push(chunk));
          answer.on('end', () => {
            const responseBody = Buffer.concat(body);
            let parsed: unknown;
            try {
              parsed = JSON.parse(requestBody.toString('utf8'));
            } catch {
              parsed = undefined;
            }
            // A write whose condition failed is billed too (a 400 ConditionalCheckFailedException).
            if (
              (answer.statusCode ?? 500) < 300 ||
              /ConditionalCheckFailed/.test(responseBody.toString('utf8'))
            ) {
              calls.push({ at, operation, ...requestUnits(operation, parsed, responseBody.length) });
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(responseBody);
          });
          answer.on('error', () => res.destroy());
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(requestBody);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
