/**
 * The Kubernetes clients against an API server that refuses (429 with
 * Retry-After, 5xx) or stalls: a plain HTTP server on loopback in front of
 * the real clients built by createKubeClients.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { runWithDeadline } from '../../lib/deadline.ts';
import { apiStatusCode, createKubeClients, loadKubeConfig } from '../../lib/kube/client.ts';
import { isRetriableAnswer, retryAfterMs } from '../../lib/kube/retrying-http.ts';

const servers: Array<{ server: Server; sockets: Set<Socket> }> = [];
after(() => {
  for (const { server, sockets } of servers) {
    for (const s of sockets) s.destroy();
    server.close();
  }
});

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Never answer. */
  stall?: boolean;
}

/** An API server answering the nth request (1-based) as `answer` says; records method and arrival time. */
async function apiServer(answer: (n: number, req: IncomingMessage) => Answer) {
  const requests: Array<{ method: string; at: number }> = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    requests.push({ method: req.method ?? '', at: performance.now() });
    const a = answer(requests.length, req);
    if (a.stall) return;
    res
      .writeHead(a.status, { 'content-type': 'application/json', ...a.headers })
      .end(JSON.stringify(a.body ?? status(a.status)));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  servers.push({ server, sockets });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  const kc = await loadKubeConfig({
    kubeconfigYaml: `
clusters: [{ name: c, cluster: { server: 'http://127.0.0.1:${address.port}', insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  });
  return { kc, requests };
}

function status(code: number) {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason: 'TooManyRequests' };
}

const node = { kind: 'Node', apiVersion: 'v1', metadata: { name: 'vk-1' } };
const fast = { baseDelayMs: 1, maxDelayMs: 5 };

describe('Kubernetes client retries', () => {
  it('honours Retry-After on a 429, then succeeds', async () => {
    const api = await apiServer((n) =>
      n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200, body: node },
    );
    const { core } = createKubeClients(api.kc, { retry: fast });
    const read = await core.readNode({ name: 'vk-1' });
    assert.equal(read.metadata?.name, 'vk-1');
    assert.equal(api.requests.length, 2);
    const [first, second] = api.requests;
    assert.ok(first && second);
    assert.ok(second.at - first.at >= 900, `waited ${second.at - first.at} ms, as Retry-After: 1 asked`);
  });

  it('retries a create refused with 429 (nothing was processed)', async () => {
    const api = await apiServer((n) => (n <= 2 ? { status: 429 } : { status: 201, body: node }));
    const { core } = createKubeClients(api.kc, { retry: fast });
    await core.createNode({ body: { metadata: { name: 'vk-1' } } });
    assert.deepEqual(
      api.requests.map((r) => r.method),
      ['POST', 'POST', 'POST'],
    );
  });

  it('retries a read on 5xx a bounded number of times, then reports the status', async () => {
    const api = await apiServer(() => ({ status: 503 }));
    const { core } = createKubeClients(api.kc, { retry: { ...fast, maxAttempts: 3 } });
    await assert.rejects(
      () => core.readNode({ name: 'vk-1' }),
      (err: unknown) => apiStatusCode(err) === 503,
    );
    assert.equal(api.requests.length, 3);
  });

  it('does not repeat a create that failed with 5xx (it may have happened)', async () => {
    const api = await apiServer(() => ({ status: 500 }));
    const { core } = createKubeClients(api.kc, { retry: fast });
    await assert.rejects(
      () => core.createNode({ body: { metadata: { name: 'vk-1' } } }),
      (err: unknown) => apiStatusCode(err) === 500,
    );
    assert.equal(api.requests.length, 1);
  });

  it('does not retry other client errors', async () => {
    const api = await apiServer(() => ({ status: 409 }));
    const { core } = createKubeClients(api.kc, { retry: fast });
    await assert.rejects(
      () => core.replaceNamespacedPodStatus({ namespace: 'ns', name: 'p', body: {} }),
      (err: unknown) => apiStatusCode(err) === 409,
    );
    assert.equal(api.requests.length, 1);
  });

  it('a Retry-After beyond the deadline ends the retries with the refusal', async () => {
    const api = await apiServer(() => ({ status: 429, headers: { 'retry-after': '5' } }));
    const { core } = createKubeClients(api.kc, { retry: fast });
    await assert.rejects(
      () => runWithDeadline(AbortSignal.timeout(300), () => core.readNode({ name: 'vk-1' })),
      (err: unknown) => apiStatusCode(err) === 429,
    );
    assert.equal(api.requests.length, 1);
  });

  it('each attempt is bounded by the request timeout', async () => {
    const api = await apiServer(() => ({ status: 200, stall: true }));
    const { core } = createKubeClients(api.kc, { requestTimeoutMs: 200, retry: fast });
    await assert.rejects(() => core.readNode({ name: 'vk-1' }));
    assert.equal(api.requests.length, 1, 'a timeout is not retried here');
  });
});

describe('retry decisions', () => {
  it('429 for every method; 5xx except for POST; nothing else', () => {
    for (const m of ['GET', 'PUT', 'PATCH', 'DELETE', 'POST']) assert.equal(isRetriableAnswer(429, m), true);
    for (const s of [500, 502, 503, 504]) {
      assert.equal(isRetriableAnswer(s, 'GET'), true);
      assert.equal(isRetriableAnswer(s, 'POST'), false);
    }
    for (const s of [200, 400, 401, 403, 404, 409, 410, 422, 501])
      assert.equal(isRetriableAnswer(s, 'GET'), false);
  });

  it('Retry-After as seconds or an HTTP date', () => {
    assert.equal(retryAfterMs('2', 0), 2_000);
    assert.equal(retryAfterMs(undefined, 0), undefined);
    assert.equal(retryAfterMs('soon', 0), undefined);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:03 GMT', now), 3_000);
    assert.equal(retryAfterMs('Thu, 01 Jan 2025 00:00:03 GMT', now), 0);
  });
});
