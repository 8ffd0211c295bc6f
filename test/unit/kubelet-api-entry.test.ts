/**
 * The kubelet API's door (kubeletApi): whose events it serves, and what an
 * unexpected failure tells the client. The cluster reviews are plain
 * functions here; the real API server's are in
 * test/integration/kubelet-api-access.test.ts.
 */
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { Dependencies } from '../../lib/app/dependencies.ts';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import type { KubeClients } from '../../lib/kube/client.ts';
import type { ClusterReviews } from '../../lib/kubelet-api/cluster-reviews.ts';
import {
  KubeletApiConfigError,
  kubeletApi,
  kubeletApiDependencies,
} from '../../lib/kubelet-api/kubelet-api-entry.ts';
import type { KubeletApiDependencies } from '../../lib/kubelet-api/serve.ts';
import { TtlCache } from '../../lib/kubelet-api/ttl-cache.ts';
import { createLogger } from '../../lib/log/logger.ts';
import type { PodProvider } from '../../lib/provider/provider.ts';

const SOURCE = { apiId: 'a1b2c3d4e5', stage: 'kubelet' };
const INTERNAL = 'connect ECONNREFUSED 10.0.3.4:443 (kube-apiserver.internal.example)';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug' }, stream) };
}

function dependencies(reviews: ClusterReviews, log = capture().log): KubeletApiDependencies {
  return {
    nodes: ['vk-1'],
    source: SOURCE,
    endpoint: { kind: 'domain', domain: 'nodes.example.com' },
    // No CA: these requests carry a bearer token, or a certificate that must never be read.
    clientCas: [],
    reviews,
    kube: {} as KubeClients,
    podProvider: {} as PodProvider,
    clock: systemClock,
    log,
    followMaxMs: 1_000,
    requestTimeoutMs: 1_000,
    startTimes: new TtlCache(systemClock),
  };
}

function event(requestContext: Record<string, unknown>, headers: Record<string, string> = {}) {
  return {
    httpMethod: 'GET',
    path: '/healthz',
    headers: { Host: 'vk-1.nodes.example.com', ...headers },
    requestContext: { requestId: 'api-request-1', domainName: 'vk-1.nodes.example.com', ...requestContext },
  };
}

async function text(body: string | Readable): Promise<string> {
  if (typeof body === 'string') return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

const invocation = () => ({ signal: new AbortController().signal, requestId: 'lambda-request-7' });

describe('kubelet API: whose events it serves', () => {
  it('does not start without the id of the API in front of it', () => {
    const config = loadConfig({ SVK_NODE_NAMES: 'vk-1', SVK_KUBELET_API_DOMAIN: 'nodes.example.com' });
    assert.throws(
      () => kubeletApiDependencies({ config } as Dependencies),
      (err) => err instanceof KubeletApiConfigError && /SVK_KUBELET_API_ID/.test(err.message),
    );
  });

  const reviews: ClusterReviews = {
    reviewToken: async () => ({ user: 'admin', groups: ['system:masters'] }),
    reviewAccess: async () => ({ allowed: true, reason: '' }),
  };

  it('serves an event of its own API and stage', async () => {
    const answer = await kubeletApi(
      event(SOURCE, { authorization: 'Bearer t' }),
      dependencies(reviews),
      invocation(),
    );
    assert.equal(answer.statusCode, 200);
  });

  it('refuses, before reading any certificate or token, an event of another API or stage or of none', async () => {
    const untouchable: ClusterReviews = {
      reviewToken: async () => assert.fail('a token of a foreign event was reviewed'),
      reviewAccess: async () => assert.fail('a foreign event was authorized'),
    };
    const { lines, log } = capture();
    const deps = dependencies(untouchable, log);
    for (const context of [
      {},
      { apiId: 'zzzzzzzzzz', stage: 'kubelet' },
      { apiId: SOURCE.apiId },
      { apiId: SOURCE.apiId, stage: 'test' },
      { stage: 'kubelet' },
    ]) {
      const answer = await kubeletApi(
        event(
          { ...context, identity: { clientCert: { clientCertPem: 'any PEM at all' } } },
          { authorization: 'Bearer t' },
        ),
        deps,
        invocation(),
      );
      assert.equal(answer.statusCode, 403, JSON.stringify(context));
      assert.equal(await text(answer.body), 'Forbidden: this request did not come through the kubelet API\n');
    }
    assert.equal(lines.filter((l) => l.msg === 'kubelet API: event from another source refused').length, 5);
  });
});

describe('kubelet API: an unexpected failure', () => {
  it('is answered 500 with the request id its log line carries, never the error text', async () => {
    const failing: ClusterReviews = {
      reviewToken: async () => {
        throw new Error(INTERNAL);
      },
      reviewAccess: async () => ({ allowed: true, reason: '' }),
    };
    const { lines, log } = capture();
    const answer = await kubeletApi(
      event(SOURCE, { authorization: 'Bearer t' }),
      dependencies(failing, log),
      invocation(),
    );
    assert.equal(answer.statusCode, 500);
    const body = await text(answer.body);
    assert.equal(body, "internal error (request id lambda-request-7): see the kubelet API function's log\n");
    assert.ok(!body.includes('ECONNREFUSED') && !body.includes('internal.example'), body);
    const logged = lines.find((l) => l.msg === 'kubelet API request failed');
    assert.ok(logged, 'the failure is logged');
    assert.match(JSON.stringify(logged), /ECONNREFUSED 10\.0\.3\.4/);
    assert.equal(logged.api_request_id, 'api-request-1');
  });
});
