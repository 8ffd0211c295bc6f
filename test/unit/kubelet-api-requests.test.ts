import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../lib/config/config.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import {
  hostWithoutPort,
  isKubeletApiEventError,
  parseKubeletApiEvent,
} from '../../lib/kubelet-api/kubelet-api-request.ts';
import { isLogQueryError, parseLogQuery } from '../../lib/kubelet-api/log-options.ts';
import { resourceMetrics } from '../../lib/kubelet-api/metrics-resource.ts';
import { nodeAddresses, nodeForHost, nodePort } from '../../lib/kubelet-api/node-endpoint.ts';
import { statsSummary } from '../../lib/kubelet-api/stats-summary.ts';
import type { PodUsage } from '../../lib/provider/provider.ts';

const NOW = Date.parse('2026-03-01T10:00:30.250Z');

function event(overrides: Record<string, unknown> = {}) {
  return {
    httpMethod: 'get',
    path: '/containerLogs/ns/p/c',
    headers: { Host: 'VK-1.Nodes.Example.com:443', authorization: 'Bearer abc' },
    queryStringParameters: { tailLines: '5' },
    multiValueQueryStringParameters: { tailLines: ['5'], follow: ['false', 'true'] },
    requestContext: { requestId: 'r-1', identity: { clientCert: { clientCertPem: 'PEM' } } },
    ...overrides,
  };
}

describe('REST API proxy events', () => {
  it('reads method, path, host, every query value, the certificate and a bearer token', () => {
    assert.deepEqual(parseKubeletApiEvent(event()), {
      method: 'GET',
      path: '/containerLogs/ns/p/c',
      host: 'vk-1.nodes.example.com',
      query: { tailLines: ['5'], follow: ['false', 'true'] },
      clientCertPem: 'PEM',
      bearerToken: 'abc',
      requestId: 'r-1',
    });
  });

  it('takes the custom domain name API Gateway served over the Host header', () => {
    const request = parseKubeletApiEvent(
      event({ requestContext: { domainName: 'vk-2.nodes.example.com', identity: {} } }),
    );
    assert.equal(request.host, 'vk-2.nodes.example.com');
    assert.equal(request.clientCertPem, undefined);
  });

  it('refuses what is not a proxy event, naming the field', () => {
    for (const [bad, field] of [
      [{ path: '/x' }, /httpMethod/],
      [event({ path: 'no-slash' }), /path/],
      [event({ headers: {}, requestContext: {} }), /no Host header/],
    ] as const) {
      assert.throws(
        () => parseKubeletApiEvent(bad),
        (err) => isKubeletApiEventError(err) && field.test(err.message),
      );
    }
  });

  it('strips ports from hosts, IPv6 included', () => {
    assert.equal(hostWithoutPort('127.1.2.3:10250'), '127.1.2.3');
    assert.equal(hostWithoutPort('[::1]:443'), '::1');
    assert.equal(hostWithoutPort('Node.Example.com'), 'node.example.com');
  });
});

describe('log query', () => {
  const q = (query: Readonly<Record<string, readonly string[]>>) => parseLogQuery(query, NOW);

  it('reads the kubelet options', () => {
    assert.deepEqual(
      q({
        tailLines: ['10'],
        limitBytes: ['100'],
        sinceSeconds: ['30'],
        timestamps: ['true'],
        follow: ['1'],
        previous: ['false'],
      }),
      { tailLines: 10, limitBytes: 100, since: new Date(NOW - 30_000), timestamps: true, follow: true },
    );
    assert.deepEqual(q({ sinceTime: ['2026-03-01T09:00:00Z'] }), { since: new Date('2026-03-01T09:00:00Z') });
    assert.deepEqual(q({ tail: ['3'] }), { tailLines: 3 });
    assert.deepEqual(q({ tail: ['all'], tailLines: ['3'] }), {});
    assert.deepEqual(q({}), {});
  });

  it('reads the longest sinceSeconds and a sinceTime before 1970 as the whole log: a valid time, never before the epoch', () => {
    assert.deepEqual(q({ sinceSeconds: ['2147483647'] }), { since: new Date(0) });
    assert.deepEqual(q({ sinceTime: ['1900-01-01T00:00:00Z'] }), { since: new Date(0) });
    assert.deepEqual(q({ sinceTime: ['2024-02-29T23:59:59.5+01:30'] }), {
      since: new Date('2024-02-29T22:29:59.500Z'),
    });
    assert.deepEqual(q({ tailLines: ['2147483647'], limitBytes: ['2147483647'] }), {
      tailLines: 2147483647,
      limitBytes: 2147483647,
    });
  });

  it('refuses what the kubelet refuses, naming the parameter', () => {
    for (const [query, message] of [
      [{ tailLines: ['-1'] }, /tailLines must be at least 0/],
      [{ limitBytes: ['0'] }, /limitBytes must be at least 1/],
      [{ sinceSeconds: ['0'] }, /sinceSeconds must be at least 1/],
      [{ sinceSeconds: ['5'], sinceTime: ['2026-03-01T09:00:00Z'] }, /cannot both be set/],
      [{ sinceTime: ['yesterday'] }, /sinceTime="yesterday" is not an RFC 3339 time/],
      [{ follow: ['maybe'] }, /follow="maybe" is not a boolean/],
      [{ tailLines: ['1.5'] }, /not a whole number/],
      // Bounded: a sinceSeconds above about 8.6e9 was an Invalid Date handed to the provider.
      [{ sinceSeconds: ['9000000000'] }, /sinceSeconds must be at most 2147483647 \(got 9000000000\)/],
      [{ sinceSeconds: ['9'.repeat(400)] }, /sinceSeconds must be at most 2147483647/],
      [{ tailLines: ['2147483648'] }, /tailLines must be at most 2147483647/],
      [{ tail: ['99999999999'] }, /tailLines must be at most 2147483647/],
      [{ limitBytes: ['1e3'] }, /limitBytes="1e3" is not a whole number/],
      [{ limitBytes: ['4294967296'] }, /limitBytes must be at most 2147483647/],
      // RFC 3339 as Go reads it: no February 31st, hour 24, leap second or offset beyond 23:59.
      [{ sinceTime: ['2026-02-31T00:00:00Z'] }, /sinceTime="2026-02-31T00:00:00Z" is not an RFC 3339 time/],
      [{ sinceTime: ['2026-02-29T00:00:00Z'] }, /sinceTime=.* is not an RFC 3339 time/],
      [{ sinceTime: ['2026-03-01T24:00:00Z'] }, /sinceTime=.* is not an RFC 3339 time/],
      [{ sinceTime: ['2026-03-01T10:00:60Z'] }, /sinceTime=.* is not an RFC 3339 time/],
      [{ sinceTime: ['2026-03-01T10:00:00+24:00'] }, /sinceTime=.* is not an RFC 3339 time/],
      [{ sinceTime: ['2026-03-01T10:00:00.1234567890Z'] }, /sinceTime=.* is not an RFC 3339 time/],
    ] as const) {
      assert.throws(
        () => q(query),
        (err) => isLogQueryError(err) && message.test(err.message),
        JSON.stringify(query),
      );
    }
  });
});

const usage: PodUsage[] = [
  {
    namespace: 'ns',
    name: 'web',
    uid: 'u-1',
    startTime: new Date('2026-03-01T10:00:00Z'),
    containers: [
      {
        name: 'app',
        startTime: new Date('2026-03-01T10:00:00Z'),
        time: new Date(NOW),
        cpu: { usageNanoCores: 10e6, usageCoreNanoSeconds: 300e6 },
        memory: { workingSetBytes: 1000, usageBytes: 1500 },
      },
      { name: 'side', time: new Date(NOW), cpu: { usageNanoCores: 5e6, usageCoreNanoSeconds: 150e6 } },
    ],
  },
];

describe('stats summary', () => {
  it('sums containers into pods and pods into the node; leaves out what nobody reports', () => {
    const summary = statsSummary('vk-1', new Date('2026-01-01T00:00:00Z'), usage, NOW);
    assert.deepEqual(summary.node, {
      nodeName: 'vk-1',
      startTime: '2026-01-01T00:00:00Z',
      cpu: { time: '2026-03-01T10:00:30Z', usageNanoCores: 15e6, usageCoreNanoSeconds: 450e6 },
      memory: { time: '2026-03-01T10:00:30Z', workingSetBytes: 1000, usageBytes: 1500 },
    });
    const [pod] = summary.pods;
    assert.deepEqual(pod?.podRef, { name: 'web', namespace: 'ns', uid: 'u-1' });
    assert.deepEqual(pod?.cpu, {
      time: '2026-03-01T10:00:30Z',
      usageNanoCores: 15e6,
      usageCoreNanoSeconds: 450e6,
    });
    assert.equal(pod?.containers[1]?.memory, undefined, 'no memory figure for side: left out, not zero');
    assert.equal(
      pod?.containers[1]?.startTime,
      '2026-03-01T10:00:00Z',
      'the pod start when the container has none',
    );
  });

  it('a provider without usage gives the node without figures; one without pods a node using nothing', () => {
    assert.deepEqual(statsSummary('vk-1', new Date(NOW), undefined, NOW).node, {
      nodeName: 'vk-1',
      startTime: '2026-03-01T10:00:30Z',
    });
    assert.equal(statsSummary('vk-1', new Date(NOW), [], NOW).node.cpu?.usageNanoCores, 0);
  });
});

describe('resource metrics', () => {
  it('writes the kubelet families as Prometheus text, sorted, with sample times', () => {
    const text = resourceMetrics(usage, NOW);
    const at = String(NOW);
    assert.equal(
      text,
      [
        '# HELP container_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the container in core-seconds',
        '# TYPE container_cpu_usage_seconds_total counter',
        `container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 0.3 ${at}`,
        `container_cpu_usage_seconds_total{container="side",namespace="ns",pod="web"} 0.15 ${at}`,
        '# HELP container_memory_working_set_bytes [ALPHA] Current working set of the container in bytes',
        '# TYPE container_memory_working_set_bytes gauge',
        `container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 1000 ${at}`,
        '# HELP container_start_time_seconds [ALPHA] Start time of the container since unix epoch in seconds',
        '# TYPE container_start_time_seconds gauge',
        `container_start_time_seconds{container="app",namespace="ns",pod="web"} ${Date.parse('2026-03-01T10:00:00Z') / 1000} ${at}`,
        '# HELP node_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the node in core-seconds',
        '# TYPE node_cpu_usage_seconds_total counter',
        `node_cpu_usage_seconds_total 0.45 ${at}`,
        '# HELP node_memory_working_set_bytes [ALPHA] Current working set of the node in bytes',
        '# TYPE node_memory_working_set_bytes gauge',
        `node_memory_working_set_bytes 1000 ${at}`,
        '# HELP pod_cpu_usage_seconds_total [ALPHA] Cumulative cpu time consumed by the pod in core-seconds',
        '# TYPE pod_cpu_usage_seconds_total counter',
        `pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 0.45 ${at}`,
        '# HELP pod_memory_working_set_bytes [ALPHA] Current working set of the pod in bytes',
        '# TYPE pod_memory_working_set_bytes gauge',
        `pod_memory_working_set_bytes{namespace="ns",pod="web"} 1000 ${at}`,
        '# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise',
        '# TYPE scrape_error gauge',
        'scrape_error 0',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values', () => {
    const odd: PodUsage[] = [
      {
        namespace: 'n',
        name: 'a"b\\c',
        uid: 'u',
        containers: [{ name: 'x', time: new Date(NOW), memory: { workingSetBytes: 1 } }],
      },
    ];
    assert.match(resourceMetrics(odd, NOW), /pod="a\\"b\\\\c"/);
  });
});

describe('node endpoints and their settings', () => {
  const domain = { kind: 'domain', domain: 'nodes.example.com' } as const;
  const local = { kind: 'addresses', addresses: { 'vk-1': '127.5.0.1', 'vk-2': '127.5.0.2' } } as const;

  it('publishes DNS names only behind a domain, the node’s own IP only locally, and the old pair without an API', () => {
    assert.deepEqual(
      nodeAddresses('vk-1', domain, undefined).map((a) => a.type),
      ['Hostname', 'InternalDNS', 'ExternalDNS'],
    );
    assert.ok(nodeAddresses('vk-1', domain, undefined).every((a) => a.address === 'vk-1.nodes.example.com'));
    assert.deepEqual(nodeAddresses('vk-2', local, undefined), [{ type: 'InternalIP', address: '127.5.0.2' }]);
    assert.deepEqual(nodeAddresses('vk-1', undefined, '10.0.0.5'), [
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'Hostname', address: 'vk-1' },
    ]);
  });

  it('finds the node from the host', () => {
    assert.equal(nodeForHost('vk-2.nodes.example.com', ['vk-1', 'vk-2'], domain), 'vk-2');
    assert.equal(nodeForHost('127.5.0.1', ['vk-1', 'vk-2'], local), 'vk-1');
    assert.equal(nodeForHost('vk-3.nodes.example.com', ['vk-1', 'vk-2'], domain), undefined);
  });

  it('tells apart nodes sharing an address by the port reached, and publishes each node’s port', () => {
    const shared = {
      kind: 'addresses',
      addresses: { 'vk-1': '172.18.0.1', 'vk-2': '172.18.0.1' },
      ports: { 'vk-1': 41001, 'vk-2': 41002 },
    } as const;
    const nodes = ['vk-1', 'vk-2'];
    assert.equal(nodeForHost('172.18.0.1', nodes, shared, 41002), 'vk-2');
    assert.equal(nodeForHost('172.18.0.1', nodes, shared, 41001), 'vk-1');
    assert.equal(nodeForHost('172.18.0.1', nodes, shared, 41003), undefined);
    // Without the port the address alone names two nodes: none is guessed.
    assert.equal(nodeForHost('172.18.0.1', nodes, shared), undefined);
    assert.equal(nodePort('vk-2', shared, 10250), 41002);
    assert.equal(nodePort('vk-1', local, 10250), 10250);
    assert.equal(nodePort('vk-1', domain, 443), 443);
    const configured = loadConfig({
      SVK_NODE_NAMES: 'vk-1,vk-2',
      SVK_KUBELET_API_ADDRESSES: 'vk-1=172.18.0.1:41001,vk-2=172.18.0.1:41002',
    });
    assert.deepEqual(configured.node.kubeletApiEndpoint, shared);
  });

  it('reads the port the client reached from X-Forwarded-Port', () => {
    const request = parseKubeletApiEvent({
      httpMethod: 'GET',
      path: '/pods',
      headers: { Host: '172.18.0.1:41002', 'X-Forwarded-Port': '41002' },
      requestContext: { domainName: '172.18.0.1' },
    });
    assert.equal(request.port, 41002);
    const without = parseKubeletApiEvent({
      httpMethod: 'GET',
      path: '/pods',
      headers: { Host: 'vk-1.nodes.example.com', 'X-Forwarded-Port': 'not-a-port' },
      requestContext: {},
    });
    assert.equal(without.port, undefined);
  });

  it('configures a domain (port 443) or local addresses, and refuses what cannot work', () => {
    const withDomain = loadConfig({ SVK_NODE_NAMES: 'vk-1', SVK_KUBELET_API_DOMAIN: 'Nodes.Example.com' });
    assert.deepEqual(withDomain.node.kubeletApiEndpoint, domain);
    assert.equal(withDomain.node.kubeletPort, 443);
    assert.equal(withDomain.kubeletApi.followMaxMs, 300_000);
    assert.equal(
      withDomain.kubeletApi.source,
      undefined,
      'no API named: the kubelet API function refuses to start',
    );
    assert.deepEqual(
      loadConfig({
        SVK_NODE_NAMES: 'vk-1',
        SVK_KUBELET_API_DOMAIN: 'nodes.example.com',
        SVK_KUBELET_API_ID: 'a1b2c3d4e5',
      }).kubeletApi.source,
      { apiId: 'a1b2c3d4e5', stage: 'kubelet' },
    );
    const withAddresses = loadConfig({
      SVK_NODE_NAMES: 'vk-1,vk-2',
      SVK_KUBELET_API_ADDRESSES: 'vk-1=127.5.0.1, vk-2=127.5.0.2',
      SVK_KUBELET_PORT: '20443',
    });
    assert.deepEqual(withAddresses.node.kubeletApiEndpoint, local);
    assert.equal(withAddresses.node.kubeletPort, 20443);
    for (const [env, variable, message] of [
      [
        { SVK_KUBELET_API_DOMAIN: 'x.example.com', SVK_KUBELET_PORT: '8443' },
        'SVK_KUBELET_PORT',
        /must be 443/,
      ],
      [
        { SVK_KUBELET_API_DOMAIN: 'x.example.com', SVK_NODE_INTERNAL_IP: '10.0.0.1' },
        'SVK_NODE_INTERNAL_IP',
        /without SNI/,
      ],
      [{ SVK_KUBELET_API_DOMAIN: 'x.example.com', SVK_NODE_NAMES: 'a.b' }, 'SVK_NODE_NAMES', /not one label/],
      [{ SVK_KUBELET_API_DOMAIN: 'not a domain' }, 'SVK_KUBELET_API_DOMAIN', /DNS domain/],
      [{ SVK_KUBELET_API_ADDRESSES: 'vk-1=nope' }, 'SVK_KUBELET_API_ADDRESSES', /node=IPv4/],
      [{ SVK_KUBELET_API_ADDRESSES: 'vk-1=127.0.0.2:70000' }, 'SVK_KUBELET_API_ADDRESSES', /address:port/],
      [
        { SVK_NODE_NAMES: 'vk-1,vk-2', SVK_KUBELET_API_ADDRESSES: 'vk-1=10.0.0.1:41000,vk-2=10.0.0.1:41000' },
        'SVK_KUBELET_API_ADDRESSES',
        /same address and port/,
      ],
      [
        { SVK_NODE_NAMES: 'vk-1,vk-2', SVK_KUBELET_API_ADDRESSES: 'vk-1=127.0.0.2' },
        'SVK_KUBELET_API_ADDRESSES',
        /no address for node\(s\) vk-2/,
      ],
      [{ SVK_KUBELET_API_FOLLOW_SECONDS: '900' }, 'SVK_KUBELET_API_FOLLOW_SECONDS', /at most 840/],
      [{ SVK_KUBELET_API_CLIENT_CA_DATA: 'bm90IGEgcGVt' }, 'SVK_KUBELET_API_CLIENT_CA_DATA', /PEM/],
      [{ SVK_KUBELET_API_ID: 'a1b2/c3' }, 'SVK_KUBELET_API_ID', /must be an API id/],
      [{ SVK_KUBELET_API_STAGE: 'kube let' }, 'SVK_KUBELET_API_STAGE', /must be a stage name/],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (err) =>
          err instanceof ConfigError &&
          err.issues.some((i) => i.variable === variable && message.test(i.message)),
        JSON.stringify(env),
      );
    }
  });
});
