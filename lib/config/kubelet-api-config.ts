import * as z from 'zod/mini';
import { API_GATEWAY_PORT, type KubeletApiEndpoint } from '../kubelet-api/node-endpoint.ts';
import { addIssue } from '../util/zod-mini.ts';
import { type ConfigIssue, pairs, whenParsed } from './env-parsing.ts';

/** The kubelet API's settings (lib/kubelet-api/), parsed from the environment with the rest of the configuration. */
export interface KubeletApiSettings {
  /** How kube-apiserver reaches our nodes; undefined: no kubelet API, nodes publish their name as Hostname. */
  endpoint?: KubeletApiEndpoint;
  /** The longest a `kubectl logs -f` streams before the answer ends. */
  followMaxMs: number;
  /** PEM of the CA(s) client certificates must chain to; the kubeconfig's cluster CA when undefined. */
  clientCaPem?: string;
  /**
   * The one API (and stage) whose events the function serves: a request
   * whose `requestContext` names another was not verified by our front.
   * Undefined when SVK_KUBELET_API_ID is unset (the kubelet API function then
   * refuses to start).
   */
  source?: KubeletApiSource;
}

/** The API Gateway REST API and stage that front the kubelet API function. */
export interface KubeletApiSource {
  apiId: string;
  stage: string;
}

/** The stage infra/kubelet-api.yml deploys the API to. */
export const KUBELET_API_STAGE = 'kubelet';

/** API Gateway ends a streamed response after 15 minutes; the function's 900 s timeout must outlast the follow. */
export const MAX_FOLLOW_SECONDS = 840;

/** SVK_KUBELET_PORT's default, which a domain replaces by 443. */
const DEFAULT_KUBELET_PORT = 10250;

const hostLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const IPV4 = z.ipv4();

/** The kubelet API's environment variables and their rules (see the table of docs/configuration.md). */
export const KUBELET_API_VARIABLES = {
  SVK_KUBELET_API_DOMAIN: z.optional(
    z.string().check(
      z.trim(),
      z.toLowerCase(),
      z.refine(
        (v: string) =>
          v.length <= 200 && v.split('.').length >= 2 && v.split('.').every((l) => hostLabel.test(l)),
        'must be a DNS domain such as nodes.example.com (each node is <node>.<domain>)',
      ),
    ),
  ),
  SVK_KUBELET_API_ADDRESSES: z.optional(
    z.pipe(
      z.string(),
      z.transform((raw: string, ctx) => {
        const placed: NodePlaces = { addresses: {}, ports: {} };
        for (const [node, place] of pairs(raw)) {
          const parsed = /^([^:]+)(?::(\d{1,5}))?$/.exec(place);
          const port = parsed?.[2] === undefined ? undefined : Number(parsed[2]);
          if (
            !node ||
            !parsed?.[1] ||
            !IPV4.safeParse(parsed[1]).success ||
            port === 0 ||
            (port ?? 0) > 65535
          ) {
            addIssue(ctx, `"${node}=${place}" is not node=IPv4 address, or node=IPv4 address:port`);
            continue;
          }
          placed.addresses[node] = parsed[1];
          if (port !== undefined) placed.ports[node] = port;
        }
        return placed;
      }),
    ),
  ),
  SVK_KUBELET_API_FOLLOW_SECONDS: z._default(
    z.pipe(
      z.pipe(z.string().check(z.trim(), z.regex(/^\d+$/, 'must be a whole number')), z.transform(Number)),
      z
        .number()
        .check(
          z.gte(1, 'must be at least 1'),
          z.lte(MAX_FOLLOW_SECONDS, `must be at most ${MAX_FOLLOW_SECONDS}`),
        ),
    ),
    300,
  ),
  SVK_KUBELET_API_ID: z.optional(
    z.string().check(z.trim(), z.regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be an API id (letters, digits, - _)')),
  ),
  SVK_KUBELET_API_STAGE: z._default(
    z
      .string()
      .check(z.trim(), z.regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be a stage name (letters, digits, - _)')),
    KUBELET_API_STAGE,
  ),
  SVK_KUBELET_API_CLIENT_CA_DATA: z.optional(
    z
      .pipe(
        z.string().check(z.trim()),
        z.transform((v: string) => Buffer.from(v, 'base64').toString('utf8')),
      )
      .check(
        z.refine(
          (pem: string) => pem.includes('-----BEGIN CERTIFICATE-----'),
          'must be the base64 of a PEM certificate bundle',
        ),
      ),
  ),
};

/** SVK_KUBELET_API_ADDRESSES read: each node's address, and the port of those that name one. */
interface NodePlaces {
  addresses: Record<string, string>;
  ports: Record<string, number>;
}

interface KubeletApiValues {
  SVK_KUBELET_API_DOMAIN: string | undefined;
  SVK_KUBELET_API_ADDRESSES: NodePlaces | undefined;
  SVK_KUBELET_API_FOLLOW_SECONDS: number;
  SVK_KUBELET_API_CLIENT_CA_DATA: string | undefined;
  SVK_KUBELET_API_ID: string | undefined;
  SVK_KUBELET_API_STAGE: string;
}

export function kubeletApiSettings(e: KubeletApiValues): KubeletApiSettings {
  const places = e.SVK_KUBELET_API_ADDRESSES;
  const endpoint: KubeletApiEndpoint | undefined = e.SVK_KUBELET_API_DOMAIN
    ? { kind: 'domain', domain: e.SVK_KUBELET_API_DOMAIN }
    : places
      ? {
          kind: 'addresses',
          addresses: places.addresses,
          ...(Object.keys(places.ports).length > 0 ? { ports: places.ports } : {}),
        }
      : undefined;
  return {
    ...(endpoint ? { endpoint } : {}),
    followMaxMs: e.SVK_KUBELET_API_FOLLOW_SECONDS * 1000,
    ...(e.SVK_KUBELET_API_CLIENT_CA_DATA ? { clientCaPem: e.SVK_KUBELET_API_CLIENT_CA_DATA } : {}),
    ...(e.SVK_KUBELET_API_ID
      ? { source: { apiId: e.SVK_KUBELET_API_ID, stage: e.SVK_KUBELET_API_STAGE } }
      : {}),
  };
}

/** The port the nodes publish: 443 behind API Gateway, else SVK_KUBELET_PORT. */
export function kubeletApiPort(settings: KubeletApiSettings, kubeletPort: number): number {
  return settings.endpoint?.kind === 'domain' ? API_GATEWAY_PORT : kubeletPort;
}

interface RuleValues {
  SVK_NODE_NAMES: string[];
  SVK_KUBELET_PORT: number;
  SVK_NODE_INTERNAL_IP: string | undefined;
  SVK_KUBELET_API_DOMAIN: string | undefined;
  SVK_KUBELET_API_ADDRESSES: NodePlaces | undefined;
}

function domainRules(v: RuleValues): ConfigIssue[] {
  const domain = v.SVK_KUBELET_API_DOMAIN;
  if (domain === undefined) return [];
  const issues: ConfigIssue[] = [];
  if (v.SVK_KUBELET_API_ADDRESSES !== undefined) {
    issues.push({
      variable: 'SVK_KUBELET_API_DOMAIN, SVK_KUBELET_API_ADDRESSES',
      message: 'name two ways to reach the nodes: set only one of them',
    });
  }
  if (v.SVK_KUBELET_PORT !== API_GATEWAY_PORT && v.SVK_KUBELET_PORT !== DEFAULT_KUBELET_PORT) {
    issues.push({
      variable: 'SVK_KUBELET_PORT',
      message: `must be ${API_GATEWAY_PORT} (or unset) with SVK_KUBELET_API_DOMAIN: API Gateway serves the domain on ${API_GATEWAY_PORT} only`,
    });
  }
  if (v.SVK_NODE_INTERNAL_IP !== undefined) {
    issues.push({
      variable: 'SVK_NODE_INTERNAL_IP',
      message:
        'cannot be set with SVK_KUBELET_API_DOMAIN: an API server preferring IPs would dial it without SNI, which the per-node hostname front cannot answer',
    });
  }
  const dotted = v.SVK_NODE_NAMES.filter((n) => n.includes('.'));
  if (dotted.length > 0) {
    issues.push({
      variable: 'SVK_NODE_NAMES',
      message: `${dotted.join(', ')}: node names with dots are not one label under the wildcard *.${domain}`,
    });
  }
  return issues;
}

function addressRules(v: RuleValues): ConfigIssue[] {
  const places = v.SVK_KUBELET_API_ADDRESSES;
  if (places === undefined) return [];
  const { addresses, ports } = places;
  const issues: ConfigIssue[] = [];
  const missing = v.SVK_NODE_NAMES.filter((n) => !(n in addresses));
  if (missing.length > 0) {
    issues.push({
      variable: 'SVK_KUBELET_API_ADDRESSES',
      message: `names no address for node(s) ${missing.join(', ')}`,
    });
  }
  // Nodes are told apart by the address and port a request reached.
  const reached = Object.entries(addresses).map(([n, ip]) => `${ip}:${ports[n] ?? v.SVK_KUBELET_PORT}`);
  if (new Set(reached).size !== reached.length) {
    issues.push({
      variable: 'SVK_KUBELET_API_ADDRESSES',
      message: 'gives two nodes the same address and port',
    });
  }
  return issues;
}

/** Rules between the kubelet API's variables and the node settings, on what parsed. */
export function kubeletApiRules(values: Partial<RuleValues>): ConfigIssue[] {
  return whenParsed(
    values,
    [
      'SVK_NODE_NAMES',
      'SVK_KUBELET_PORT',
      'SVK_NODE_INTERNAL_IP',
      'SVK_KUBELET_API_DOMAIN',
      'SVK_KUBELET_API_ADDRESSES',
    ],
    (v) => [...domainRules(v), ...addressRules(v)],
  );
}
