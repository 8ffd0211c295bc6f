/**
 * Our Kubernetes client on the wire, against a plain HTTP server on loopback
 * that records what it is sent: the paths, queries, bodies and patch
 * Content-Types of the typed calls (as client-node sent them), gzip answers,
 * errors that carry the server's Status (and read well in a log line), and
 * the watch stream.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { apiErrorFields, apiErrorMessage, isNamespaceGoing } from '../../lib/kube/api-error-message.ts';
import {
  apiStatusCode,
  createKubeClients,
  isGone,
  isNotFound,
  loadKubeConfig,
} from '../../lib/kube/client.ts';
import { KubeApiError, KubeRequestError } from '../../lib/kube/kube-errors.ts';
import { PatchStrategy, setHeaderOptions } from '../../lib/kube/patch.ts';
import { watchStream } from '../../lib/kube/watch.ts';
import { errorFields } from '../../lib/log/error-fields.ts';

interface Seen {
  method: string;
  url: string;
  contentType: string | undefined;
  authorization: string | undefined;
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const sockets = new Set<Socket>();
const closers: Array<() => void> = [];
after(() => {
  for (const s of sockets) s.destroy();
  for (const close of closers) close();
});

async function apiServer(handler: Handler) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        contentType: req.headers['content-type'],
        authorization: req.headers.authorization,
        body,
      });
      handler(req, res, body);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  closers.push(() => server.close());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  const context = await loadKubeConfig({
    kubeconfigYaml: `
clusters: [{ name: c, cluster: { server: 'http://127.0.0.1:${address.port}', insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t0ken } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  });
  return { context, seen, kube: createKubeClients(context, { retry: { maxAttempts: 1 } }) };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

const NOT_FOUND = {
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  message: 'nodes "vk-9" not found',
  reason: 'NotFound',
  details: { name: 'vk-9', kind: 'nodes' },
  code: 404,
};

describe('typed calls on the wire', () => {
  it('sends paths, queries, bodies and patch strategies as client-node did', async () => {
    const api = await apiServer((_req, res, body) =>
      json(res, 200, body ? JSON.parse(body) : { kind: 'Node' }),
    );
    const { core, coordination } = api.kube;
    await core.readNode({ name: 'vk 1' });
    await core.patchNodeStatus(
      { name: 'vk', body: { status: {} }, fieldManager: 'svk', force: true },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
    await core.patchNode(
      { name: 'vk', body: { spec: {} } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=vk', limit: 500, _continue: 'abc' });
    await core.deleteNamespacedPod({
      namespace: 'ns',
      name: 'web',
      gracePeriodSeconds: 0,
      body: { gracePeriodSeconds: 0, preconditions: { uid: 'u-1' } },
    });
    await coordination.replaceNamespacedLease({
      namespace: 'kube-node-lease',
      name: 'vk',
      body: { spec: {} },
    });
    assert.deepEqual(
      api.seen.map((s) => [s.method, s.url, s.contentType ?? '', s.body]),
      [
        ['GET', '/api/v1/nodes/vk%201', '', ''],
        [
          'PATCH',
          '/api/v1/nodes/vk/status?fieldManager=svk&force=true',
          'application/apply-patch+yaml',
          '{"status":{}}',
        ],
        ['PATCH', '/api/v1/nodes/vk', 'application/merge-patch+json', '{"spec":{}}'],
        ['GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dvk&limit=500&continue=abc', '', ''],
        [
          'DELETE',
          '/api/v1/namespaces/ns/pods/web?gracePeriodSeconds=0',
          'application/json',
          '{"gracePeriodSeconds":0,"preconditions":{"uid":"u-1"}}',
        ],
        [
          'PUT',
          '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk',
          'application/json',
          '{"spec":{}}',
        ],
      ],
    );
    assert.ok(api.seen.every((s) => s.authorization === 'Bearer t0ken'));
    assert.equal(api.kube.requests(), 6);
  });

  it('reads a gzip answer', async () => {
    const api = await apiServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(
          gzipSync(JSON.stringify({ metadata: { name: 'vk', creationTimestamp: '2026-11-27T00:00:00Z' } })),
        );
    });
    const node = await api.kube.core.readNode({ name: 'vk' });
    assert.equal(node.metadata?.name, 'vk');
    assert.ok(node.metadata?.creationTimestamp instanceof Date);
  });
});

describe('errors', () => {
  it("an error status rejects with the server's Status: classified, one line, a few log fields", async () => {
    const api = await apiServer((_req, res) => json(res, 404, NOT_FOUND));
    const err = await api.kube.core.readNode({ name: 'vk-9' }).catch((e: unknown) => e);
    assert.ok(err instanceof KubeApiError);
    assert.equal(apiStatusCode(err), 404);
    assert.ok(isNotFound(err));
    assert.ok(isNamespaceGoing(err) === false);
    assert.equal(err.message, 'HTTP 404 NotFound: nodes "vk-9" not found (GET /api/v1/nodes/vk-9)');
    assert.equal(apiErrorMessage(err), 'HTTP 404: nodes "vk-9" not found');
    assert.deepEqual(apiErrorFields(err), {
      status: 404,
      reason: 'NotFound',
      message: 'nodes "vk-9" not found',
    });
    assert.deepEqual(errorFields(err), {
      type: 'KubeApiError',
      status: 404,
      reason: 'NotFound',
      message: 'nodes "vk-9" not found',
    });
  });

  it('an answer that is not JSON keeps its status', async () => {
    const api = await apiServer((_req, res) => res.writeHead(502).end('<html>bad gateway</html>'));
    const err = await api.kube.core.readNode({ name: 'vk' }).catch((e: unknown) => e);
    assert.equal(apiStatusCode(err), 502);
    assert.equal(apiErrorMessage(err), 'HTTP 502');
  });

  it('no answer: a KubeRequestError naming the request and the cause, not an API error', async () => {
    const api = await apiServer(() => {
      // Never answers.
    });
    const slow = createKubeClients(api.context, { requestTimeoutMs: 100, retry: { maxAttempts: 1 } });
    const timedOut = await slow.core.readNode({ name: 'vk' }).catch((e: unknown) => e);
    assert.ok(timedOut instanceof KubeRequestError);
    assert.equal(timedOut.code, 'TimeoutError');
    assert.equal(timedOut.message, 'GET /api/v1/nodes/vk: no answer within 100 ms');
    assert.equal(apiStatusCode(timedOut), undefined);
    const refused = await loadKubeConfig({
      kubeconfigYaml: `clusters: [{ name: c, cluster: { server: 'http://127.0.0.1:9', insecure-skip-tls-verify: true } }]
contexts: [{ name: x, context: { cluster: c } }]
current-context: x
`,
    });
    const err = await createKubeClients(refused)
      .core.readNode({ name: 'vk' })
      .catch((e: unknown) => e);
    assert.ok(err instanceof KubeRequestError);
    assert.equal(err.code, 'ECONNREFUSED');
    assert.equal(apiStatusCode(err), undefined);
    assert.equal(apiErrorMessage(err).startsWith('GET /api/v1/nodes/vk: connect ECONNREFUSED'), true);
  });

  it("client-node's errors and a watch's Status are still understood (tooling, ERROR events)", () => {
    const apiException = Object.assign(new Error('HTTP-Code: 409'), { code: 409, body: '{}', headers: {} });
    assert.equal(apiStatusCode(apiException), 409);
    assert.equal(apiStatusCode(Object.assign(new Error('Gone'), { statusCode: 410 })), 410);
    assert.ok(isGone({ kind: 'Status', code: 410, reason: 'Expired' }));
    assert.equal(
      apiStatusCode(new DOMException('late', 'TimeoutError')),
      undefined,
      'a DOMException code is not a status',
    );
  });
});

describe('watchStream', () => {
  it('delivers events in order across chunk boundaries, then resolves when the server ends it', async () => {
    const api = await apiServer((req, res) => {
      assert.match(req.url ?? '', /watch=true/);
      res.writeHead(200, { 'content-type': 'application/json' });
      const lines = [
        {
          type: 'ADDED',
          object: {
            metadata: { name: 'a', resourceVersion: '1', creationTimestamp: '2026-11-27T00:00:00Z' },
          },
        },
        { type: 'BOOKMARK', object: { metadata: { resourceVersion: '2' } } },
        { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n');
      res.write(lines.slice(0, 30));
      setTimeout(() => res.end(`${lines.slice(30)}\n`), 20);
    });
    const events: Array<[string, unknown]> = [];
    let opened = 0;
    await watchStream(
      api.context,
      '/api/v1/pods',
      { resourceVersion: '0' },
      (t, o) => events.push([t, o]),
      new AbortController().signal,
      {
        onOpen: () => opened++,
      },
    );
    assert.equal(opened, 1);
    assert.deepEqual(
      events.map(([t]) => t),
      ['ADDED', 'BOOKMARK', 'ERROR'],
    );
    const added = events[0]?.[1] as { metadata: { creationTimestamp: unknown } };
    assert.equal(
      added.metadata.creationTimestamp,
      '2026-11-27T00:00:00Z',
      'watch objects are parsed JSON, as client-node gave them',
    );
    assert.ok(isGone(events[2]?.[1]));
    assert.equal(api.seen[0]?.url, '/api/v1/pods?resourceVersion=0&watch=true');
  });

  it("a refused watch rejects with the status and the server's Status; aborting resolves", async () => {
    const api = await apiServer((req, res) => {
      if ((req.url ?? '').includes('resourceVersion=1'))
        json(res, 410, { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' });
      else res.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
    });
    const refused = await watchStream(
      api.context,
      '/api/v1/pods',
      { resourceVersion: '1' },
      () => {},
      new AbortController().signal,
    ).catch((e: unknown) => e);
    assert.ok(isGone(refused));
    assert.equal(apiErrorMessage(refused), 'HTTP 410: too old');
    const stop = new AbortController();
    const open = watchStream(
      api.context,
      '/api/v1/pods',
      { resourceVersion: '2' },
      () => assert.fail('no event'),
      stop.signal,
      {
        onOpen: () => stop.abort(),
      },
    );
    await open;
  });
});
