import * as z from 'zod/mini';
import '../../util/zod-mini.ts';
import {
  type ConfigIssue,
  type Env,
  parseSettings,
  type SettingsResult,
  secretsManagerSecret,
  type Variables,
  whenParsed,
  wholeNumber,
} from '../../config/env-parsing.ts';

/**
 * The Docker provider's own environment variables, validated at cold start
 * with the rest of the configuration. Light on purpose (zod/mini and env-parsing
 * only): the provider itself, and dockerode with it, is loaded only when it
 * is chosen. The TLS material is named (a secret, a directory), never held.
 */

/** Where the engine is and how to reach it. */
export type DockerEndpoint =
  | { kind: 'unix'; socketPath: string }
  | {
      kind: 'tcp';
      host: string;
      port: number;
      /** Client certificate, key and CA: from a Secrets Manager secret (in AWS) or a directory (local runs). */
      tls: { secret: string } | { certPath: string };
    };

export interface DockerSettings {
  endpoint: DockerEndpoint;
  /** The network every pod's infra container joins. */
  network: string;
  /** The image of every pod's infra container. */
  infraImage: string;
  pullTimeoutMs: number;
  /** The hostIP of every pod; the node's internal IP (or the engine's host) when unset. */
  hostIp?: string;
  /** The cluster's DNS domain (the kubelet's clusterDomain), which pods' FQDNs end in. */
  clusterDomain: string;
  /** The image of each node's prober container (prober/prober-container.ts): any with `node` 18 or later. */
  proberImage: string;
  /** Where the engine's socket is on the engine host, mounted into the prober for exec probes and hooks. */
  engineSocket: string;
}

export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';
export const DEFAULT_INFRA_IMAGE = 'registry.k8s.io/pause:3.10';
/** Node's official image: the prober needs nothing but `node`. */
export const DEFAULT_PROBER_IMAGE = 'docker.io/library/node:22-alpine';
/** Docker Engine's default socket; a rootful Podman's is /run/podman/podman.sock. */
export const DEFAULT_ENGINE_SOCKET = '/var/run/docker.sock';
/** What kubeadm and EKS configure their kubelets with. */
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

/** A DNS-1123 subdomain, as Kubernetes checks DNS names: lowercase labels of 1-63 characters, at most 253 in all. */
const DNS_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*$/;

const HOST = /^(?:unix:\/\/(\/.+)|tcp:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5}))$/;
const hostRule = z.optional(
  z.string().check(
    z.trim(),
    z.regex(HOST, 'must be unix:///path/to/socket or tcp://host:port'),
    z.refine((h: string) => Number(HOST.exec(h)?.[3] ?? 1) <= 65535, 'port must be 1-65535'),
  ),
);

const DOCKER_VARIABLES = {
  SVK_DOCKER_HOST: hostRule,
  /** The docker CLI's variable, used when SVK_DOCKER_HOST is not set. */
  DOCKER_HOST: hostRule,
  SVK_DOCKER_TLS_SECRET: secretsManagerSecret(),
  SVK_DOCKER_CERT_PATH: z.optional(z.string().check(z.trim(), z.minLength(1, 'must be a directory'))),
  SVK_DOCKER_NETWORK: z._default(
    z.string().check(z.trim(), z.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'must be a network name')),
    'bridge',
  ),
  SVK_DOCKER_INFRA_IMAGE: z._default(
    z
      .string()
      .check(z.trim(), z.regex(/^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/, 'must be an image reference')),
    DEFAULT_INFRA_IMAGE,
  ),
  SVK_DOCKER_PROBER_IMAGE: z._default(
    z
      .string()
      .check(z.trim(), z.regex(/^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/, 'must be an image reference')),
    DEFAULT_PROBER_IMAGE,
  ),
  SVK_DOCKER_ENGINE_SOCKET: z.optional(
    z.string().check(z.trim(), z.regex(/^\/[^\0]*$/, 'must be an absolute path on the engine host')),
  ),
  SVK_DOCKER_PULL_TIMEOUT_SECONDS: wholeNumber(600, 10, 3600),
  SVK_DOCKER_HOST_IP: z.optional(z.ipv4({ message: 'must be an IPv4 address' })),
  SVK_DOCKER_CLUSTER_DOMAIN: z._default(
    z
      .string()
      .check(
        z.trim(),
        z.regex(
          DNS_NAME,
          'must be a DNS name: lowercase labels of letters, digits and -, such as cluster.local',
        ),
      ),
    DEFAULT_CLUSTER_DOMAIN,
  ),
};

type DockerVariables = Variables<typeof DOCKER_VARIABLES>;

/**
 * Reads the Docker provider's settings. The engine is SVK_DOCKER_HOST, else
 * DOCKER_HOST (as the docker CLI reads it), else the default socket. A
 * tcp:// engine needs TLS client authentication: an engine API open
 * without it is root on its host to anyone who reaches the port.
 */
export function parseDockerSettings(env: Env): SettingsResult<DockerSettings> {
  return parseSettings(
    DOCKER_VARIABLES,
    env,
    (v): DockerSettings => ({
      endpoint: endpointOf(v) ?? { kind: 'unix', socketPath: '/var/run/docker.sock' },
      network: v.SVK_DOCKER_NETWORK,
      infraImage: v.SVK_DOCKER_INFRA_IMAGE,
      pullTimeoutMs: v.SVK_DOCKER_PULL_TIMEOUT_SECONDS * 1000,
      ...(v.SVK_DOCKER_HOST_IP ? { hostIp: v.SVK_DOCKER_HOST_IP } : {}),
      clusterDomain: v.SVK_DOCKER_CLUSTER_DOMAIN,
      proberImage: v.SVK_DOCKER_PROBER_IMAGE,
      engineSocket: v.SVK_DOCKER_ENGINE_SOCKET ?? engineSocketOf(endpointOf(v)),
    }),
    (v) =>
      whenParsed(
        v,
        ['SVK_DOCKER_HOST', 'DOCKER_HOST', 'SVK_DOCKER_TLS_SECRET', 'SVK_DOCKER_CERT_PATH'],
        tlsRules,
      ),
  );
}

/** The engine the variables name; undefined when its host or TLS settings are not usable. */
function endpointOf(v: Partial<DockerVariables>): DockerEndpoint | undefined {
  const match = HOST.exec(v.SVK_DOCKER_HOST ?? v.DOCKER_HOST ?? DEFAULT_DOCKER_HOST);
  if (match?.[1]) return { kind: 'unix', socketPath: match[1] };
  if (!match?.[2] || !match[3]) return undefined;
  const tls = v.SVK_DOCKER_TLS_SECRET
    ? { secret: v.SVK_DOCKER_TLS_SECRET }
    : v.SVK_DOCKER_CERT_PATH
      ? { certPath: v.SVK_DOCKER_CERT_PATH }
      : undefined;
  return tls
    ? { kind: 'tcp', host: match[2].replace(/^\[|\]$/g, ''), port: Number(match[3]), tls }
    : undefined;
}

/** The engine's socket on its host: the unix socket the provider talks to, else Docker Engine's default. */
function engineSocketOf(endpoint: DockerEndpoint | undefined): string {
  return endpoint?.kind === 'unix' ? endpoint.socketPath : DEFAULT_ENGINE_SOCKET;
}

/** TLS settings belong to a tcp:// engine, which needs exactly one of them. */
function tlsRules(
  v: Pick<
    DockerVariables,
    'SVK_DOCKER_HOST' | 'DOCKER_HOST' | 'SVK_DOCKER_TLS_SECRET' | 'SVK_DOCKER_CERT_PATH'
  >,
): ConfigIssue[] {
  const hostVariable = v.SVK_DOCKER_HOST !== undefined ? 'SVK_DOCKER_HOST' : 'DOCKER_HOST';
  const host = v.SVK_DOCKER_HOST ?? v.DOCKER_HOST ?? DEFAULT_DOCKER_HOST;
  const given = (['SVK_DOCKER_TLS_SECRET', 'SVK_DOCKER_CERT_PATH'] as const).filter(
    (k) => v[k] !== undefined,
  );
  if (host.startsWith('unix://')) {
    return given.map((variable) => ({
      variable,
      message: `is only used with a tcp:// engine, and ${hostVariable === 'DOCKER_HOST' && v.DOCKER_HOST === undefined ? 'the default engine' : hostVariable} is a unix socket`,
    }));
  }
  if (given.length === 1) return [];
  return [
    given.length === 0
      ? {
          variable: hostVariable,
          message:
            'is a tcp:// engine: set SVK_DOCKER_TLS_SECRET (or SVK_DOCKER_CERT_PATH locally) for TLS client authentication',
        }
      : { variable: given.join(', '), message: 'set only one of them' },
  ];
}
