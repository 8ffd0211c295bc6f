/**
 * The kubelet API's parsers, fuzzed (fast-check): the proxy event, the path
 * and query as the function routes them, the log query, and the subject of
 * a client certificate's DER. Whatever comes in is answered 4xx (or served),
 * or rejected with the module's own error; nothing escapes as a 500 or a
 * foreign exception, and no Invalid Date or unbounded number reaches a
 * provider.
 *
 * The cluster reviews, the API server's pod reads and the provider are plain
 * functions here; the function against the real API server is
 * test/integration/kubelet-api*.test.ts.
 *
 * Runs are reproducible: the seed is fixed (FC_SEED overrides it, FC_RUNS
 * the number of runs).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { systemClock } from '../../lib/clock.ts';
import type { KubeClients } from '../../lib/kube/client.ts';
import { kubeletApi } from '../../lib/kubelet-api/kubelet-api-entry.ts';
import { isKubeletApiEventError, parseKubeletApiEvent } from '../../lib/kubelet-api/kubelet-api-request.ts';
import { isLogQueryError, MAX_LOG_PARAMETER, parseLogQuery } from '../../lib/kubelet-api/log-options.ts';
import type { KubeletApiDependencies } from '../../lib/kubelet-api/serve.ts';
import { TtlCache } from '../../lib/kubelet-api/ttl-cache.ts';
import { isCertificateRejected, subjectIdentity } from '../../lib/kubelet-api/x509-identity.ts';
import { createLogger } from '../../lib/log/logger.ts';
import type { ContainerLogOptions, PodProvider } from '../../lib/provider/provider.ts';
import { issuePem, newCertificateAuthority } from '../support/kubelet-api.ts';

const params = {
  seed: Number(process.env.FC_SEED ?? 7_654_321),
  numRuns: Number(process.env.FC_RUNS ?? 300),
};

const NOW = Date.parse('2026-03-01T10:00:00Z');
const SOURCE = { apiId: 'a1b2c3d4e5', stage: 'kubelet' };
const LOG_PARAMETERS = [
  'tailLines',
  'tail',
  'limitBytes',
  'sinceSeconds',
  'sinceTime',
  'timestamps',
  'previous',
  'follow',
];

/** Runs `fn`; returns what it threw, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err;
  }
}

/** Strings a number parser meets: digits of any length, signs, exponents, decimals, words. */
const numberish = fc.oneof(
  fc.string(),
  fc.integer().map(String),
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }).map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.double().map(String),
  fc.constantFrom(
    '',
    'all',
    '-0',
    '+1',
    '1e3',
    '0x10',
    ' 5',
    '5 ',
    '٣',
    '2147483647',
    '2147483648',
    '8640000000',
  ),
);

/** Strings a time parser meets: near-RFC 3339 times with fields out of range, and anything. */
const timeish = fc.oneof(
  fc.string(),
  fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.integer({ min: 0, max: 99 }),
      fc.constantFrom('', '.5', '.123456789', '.1234567890'),
      fc.constantFrom('Z', '+00:00', '-23:59', '+24:00', '+05:99', 'z', ''),
    )
    .map(([y, mo, d, h, mi, s, frac, zone]) => {
      const two = (n: number) => String(n).padStart(2, '0');
      return `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}${frac}${zone}`;
    }),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);

const flagish = fc.constantFrom('true', 'false', '1', '0', 'T', 'maybe', '');
const values = (value: fc.Arbitrary<string>) => fc.array(value, { minLength: 1, maxLength: 2 });
/** A query: each log parameter perhaps, with a value of its kind or any, and other keys. */
const query = fc
  .tuple(
    fc.record(
      {
        tailLines: values(numberish),
        tail: values(numberish),
        limitBytes: values(numberish),
        sinceSeconds: values(numberish),
        sinceTime: values(timeish),
        timestamps: values(flagish),
        previous: values(flagish),
        follow: values(flagish),
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(fc.string(), values(fc.oneof(numberish, timeish, flagish)), { maxKeys: 3 }),
  )
  .map(([known, other]) => ({ ...other, ...known }) as Record<string, string[]>);

describe('log query, fuzzed', () => {
  it('gives options a provider can use (a valid time, bounded numbers) or a LogQueryError naming the parameter', () => {
    fc.assert(
      fc.property(query, (q) => {
        let options: ContainerLogOptions;
        try {
          options = parseLogQuery(q, NOW);
        } catch (err) {
          assert.ok(isLogQueryError(err), `not a LogQueryError: ${String(err)}`);
          assert.ok(
            LOG_PARAMETERS.some((name) => err.message.includes(name === 'tail' ? 'tailLines' : name)),
            err.message,
          );
          assert.ok(err.message.length < 300, 'the value is quoted short');
          return;
        }
        if (options.since) {
          assert.ok(Number.isFinite(options.since.getTime()), 'a valid time');
          assert.ok(options.since.getTime() >= 0, 'not before the epoch');
        }
        for (const n of [options.tailLines, options.limitBytes]) {
          if (n !== undefined)
            assert.ok(Number.isSafeInteger(n) && n >= 0 && n <= MAX_LOG_PARAMETER, String(n));
        }
      }),
      params,
    );
  });
});

describe('REST API proxy event parser, fuzzed', () => {
  const wellFormed = fc.record(
    {
      httpMethod: fc.oneof(fc.constantFrom('GET', 'get', 'POST', 'HEAD'), fc.string()),
      path: fc.oneof(
        fc.string(),
        fc.string().map((s) => `/${s}`),
      ),
      headers: fc.oneof(fc.constant(null), fc.dictionary(fc.string(), fc.string())),
      multiValueHeaders: fc.oneof(fc.constant(null), fc.dictionary(fc.string(), fc.array(fc.string()))),
      queryStringParameters: fc.oneof(fc.constant(null), fc.dictionary(fc.string(), fc.string())),
      multiValueQueryStringParameters: fc.oneof(
        fc.constant(null),
        fc.dictionary(fc.string(), fc.array(fc.string())),
      ),
      requestContext: fc.record(
        {
          requestId: fc.string(),
          apiId: fc.string(),
          stage: fc.string(),
          domainName: fc.string(),
          identity: fc.oneof(
            fc.anything(),
            fc.record({ clientCert: fc.record({ clientCertPem: fc.string() }) }),
          ),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  );

  it('reads a request or throws a KubeletApiEventError, never another error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), wellFormed), (event) => {
        const err = thrown(() => parseKubeletApiEvent(event));
        assert.ok(
          err === undefined || isKubeletApiEventError(err),
          `not a KubeletApiEventError: ${String(err)}`,
        );
      }),
      params,
    );
  });
});

describe('the kubelet API door, fuzzed: path and query as routed', () => {
  const pod: V1Pod = {
    metadata: { namespace: 'ns', name: 'p', uid: 'u-1' },
    spec: { nodeName: 'vk-1', containers: [{ name: 'c', image: 'busybox' }] },
    status: {
      containerStatuses: [
        { name: 'c', image: 'busybox', imageID: '', ready: true, restartCount: 0, state: { running: {} } },
      ],
    },
  };
  const asked: ContainerLogOptions[] = [];
  const deps: KubeletApiDependencies = {
    nodes: ['vk-1'],
    source: SOURCE,
    endpoint: { kind: 'domain', domain: 'nodes.example.com' },
    clientCas: [],
    reviews: {
      reviewToken: async () => ({ user: 'admin', groups: ['system:masters'] }),
      reviewAccess: async () => ({ allowed: true, reason: '' }),
    },
    kube: {
      core: {
        readNamespacedPod: async ({ namespace, name }: { namespace: string; name: string }) => {
          if (namespace === 'ns' && name === 'p') return pod;
          throw Object.assign(new Error('not found'), { statusCode: 404 });
        },
        readNode: async () => ({ metadata: { creationTimestamp: new Date(NOW) } }),
      },
    } as unknown as KubeClients,
    podProvider: {
      containerLogs: async (_pod: V1Pod, _container: string, options: ContainerLogOptions) => {
        asked.push(options);
        return Readable.from([Buffer.from('line\n')]);
      },
      podStats: async () => [],
    } as unknown as PodProvider,
    clock: { ...systemClock, now: () => NOW },
    log: createLogger({ level: 'silent' }),
    followMaxMs: 1_000,
    requestTimeoutMs: 1_000,
    startTimes: new TtlCache(systemClock),
  };

  const segment = fc.oneof(
    fc.constantFrom(
      'containerLogs',
      'ns',
      'p',
      'c',
      'stats',
      'summary',
      'metrics',
      'resource',
      'healthz',
      'exec',
      '..',
      '.',
      '',
      '%2F',
      '%00',
    ),
    fc.string(),
  );
  const path = fc
    .oneof(
      fc.constantFrom(
        '/healthz',
        '/stats/summary',
        '/metrics/resource',
        '/containerLogs/ns/p/c',
        '/exec/ns/p/c',
        '/',
      ),
      fc.array(segment, { maxLength: 6 }).map((segments) => `/${segments.join('/')}`),
      fc.string(),
    )
    // /pods is the API server's own list (rawGet over HTTP): not a parser, and not reachable here.
    .filter((p) => !/^\/pods\/*$/.test(p));
  const event = fc.record({
    httpMethod: fc.oneof(fc.constantFrom('GET', 'POST', 'HEAD', 'DELETE'), fc.string()),
    path,
    headers: fc.constant({ Authorization: 'Bearer t' }),
    multiValueQueryStringParameters: fc.oneof(fc.constant(null), query),
    requestContext: fc.record({
      ...{ apiId: fc.constant(SOURCE.apiId), stage: fc.constant(SOURCE.stage) },
      requestId: fc.string(),
      domainName: fc.oneof(fc.constant('vk-1.nodes.example.com'), fc.string()),
      // A certificate that is no certificate of the client CA: the bearer token is never used then.
      identity: fc.oneof(
        fc.constant({ clientCert: null }),
        fc.record({ clientCert: fc.record({ clientCertPem: fc.string() }) }),
      ),
    }),
  });

  it('answers every request 2xx, 4xx or 501 (never a 500, never a throw), and hands a provider only valid options', async () => {
    await fc.assert(
      fc.asyncProperty(event, async (e) => {
        const answer = await kubeletApi(e, deps, { signal: new AbortController().signal, requestId: 'fuzz' });
        const body = typeof answer.body === 'string' ? answer.body : (await answer.body.toArray()).join('');
        assert.ok(
          (answer.statusCode >= 200 && answer.statusCode < 500) || answer.statusCode === 501,
          `${answer.statusCode} ${body} for ${JSON.stringify(e)}`,
        );
      }),
      params,
    );
    for (const options of asked) {
      if (options.since) assert.ok(Number.isFinite(options.since.getTime()) && options.since.getTime() >= 0);
    }
  });
});

describe('certificate subject parser, fuzzed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svk-fuzz-x509-'));
  let der: Uint8Array;
  before(async () => {
    const ca = await newCertificateAuthority(dir, 'ca');
    const pem = await issuePem(ca, dir, 'client', {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters', 'team a'],
      usage: 'client',
    });
    der = new Uint8Array(Buffer.from(pem.cert.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const outcome = (bytes: Uint8Array) => {
    const err = thrown(() => subjectIdentity(bytes));
    assert.ok(
      err === undefined || isCertificateRejected(err),
      `not a CertificateRejectedError: ${String(err)}`,
    );
  };

  it('reads the real certificate', () => {
    assert.deepEqual(subjectIdentity(der), {
      user: 'kube-apiserver-kubelet-client',
      groups: ['system:masters', 'team a'],
    });
  });

  it('reads any bytes as an identity or a CertificateRejectedError, never another error', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), outcome), params);
  });

  it('reads any mutation of a real certificate (bytes changed, cut short) the same way', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        fc.option(fc.nat()),
        (changes, cut) => {
          const bytes = der.slice(0, cut === null ? der.length : cut % (der.length + 1));
          for (const [at, value] of changes) if (bytes.length > 0) bytes[at % bytes.length] = value;
          outcome(bytes);
        },
      ),
      params,
    );
  });

  it('reads any value under any string tag in the CommonName the same way', () => {
    // The subject's CommonName (the issuer's comes first): its OID (06 03 55 04 03), then a tag, a length, the text.
    const oid = Buffer.from(der).lastIndexOf(Buffer.from([0x06, 0x03, 0x55, 0x04, 0x03]));
    fc.assert(
      fc.property(
        fc.constantFrom(0x0c, 0x13, 0x14, 0x16, 0x1c, 0x1e, 0x00, 0xff),
        fc.uint8Array({ minLength: 4, maxLength: 4 }),
        (tag, value) => {
          const bytes = der.slice();
          const at = oid + 5;
          bytes[at] = tag;
          // Overwrite the first four bytes of the text (the length stays), e.g. an invalid UniversalString code point.
          bytes.set(value, at + 2);
          outcome(bytes);
        },
      ),
      params,
    );
  });
});
