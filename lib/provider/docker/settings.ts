import { z } from 'zod';

/**
 * The Docker provider's own environment variables, validated at cold start
 * with every issue named at once. Light on purpose (zod only): the provider
 * itself, and dockerode with it, is loaded only when it is chosen.
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
}

export interface DockerSettingsIssue {
  variable: string;
  message: string;
}

export type DockerSettingsResult =
  | { ok: true; settings: DockerSettings }
  | { ok: false; issues: DockerSettingsIssue[] };

export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';
export const DEFAULT_INFRA_IMAGE = 'registry.k8s.io/pause:3.10';

const HOST = /^(unix:\/\/(\/.+)|tcp:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5}))$/;

const variables = {
  SVK_DOCKER_HOST: z
    .string()
    .trim()
    .regex(HOST, 'must be unix:///path/to/socket or tcp://host:port')
    .optional(),
  SVK_DOCKER_TLS_SECRET: z
    .string()
    .trim()
    .regex(
      /^([A-Za-z0-9/_+=.@-]{1,512}|arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+)$/,
      'must be a Secrets Manager secret name or ARN',
    )
    .optional(),
  SVK_DOCKER_CERT_PATH: z.string().trim().min(1, 'must be a directory').optional(),
  SVK_DOCKER_NETWORK: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'must be a network name')
    .default('bridge'),
  SVK_DOCKER_INFRA_IMAGE: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/, 'must be an image reference')
    .default(DEFAULT_INFRA_IMAGE),
  SVK_DOCKER_PULL_TIMEOUT_SECONDS: z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().min(10, 'must be at least 10').max(3600, 'must be at most 3600'))
    .default(600),
  SVK_DOCKER_HOST_IP: z.ipv4({ message: 'must be an IPv4 address' }).optional(),
};

type Variables = { [K in keyof typeof variables]: z.output<(typeof variables)[K]> };

/**
 * Reads the Docker provider's settings. The engine address is
 * SVK_DOCKER_HOST, else DOCKER_HOST (as the docker CLI reads it), else the
 * default socket. A tcp:// engine needs TLS client authentication: an engine
 * API open without it is root on its host to anyone who reaches the port.
 */
export function parseDockerSettings(env: Readonly<Record<string, string | undefined>>): DockerSettingsResult {
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const values: Partial<Variables> = {};
  const issues: DockerSettingsIssue[] = [];
  for (const [variable, rule] of Object.entries(variables)) {
    const parsed = rule.safeParse(given[variable]);
    if (parsed.success) Object.assign(values, { [variable]: parsed.data });
    else issues.push(...parsed.error.issues.map((i) => ({ variable, message: i.message })));
  }
  const hostVariable = given.SVK_DOCKER_HOST !== undefined ? 'SVK_DOCKER_HOST' : 'DOCKER_HOST';
  const host =
    given.SVK_DOCKER_HOST !== undefined ? values.SVK_DOCKER_HOST : (given.DOCKER_HOST ?? DEFAULT_DOCKER_HOST);
  const match = host === undefined ? undefined : HOST.exec(host.trim());
  if (host !== undefined && !match)
    issues.push({ variable: hostVariable, message: 'must be unix:///path/to/socket or tcp://host:port' });
  const tlsGiven = ['SVK_DOCKER_TLS_SECRET', 'SVK_DOCKER_CERT_PATH'].filter((v) => given[v] !== undefined);
  let endpoint: DockerEndpoint | undefined;
  if (match?.[2]) {
    endpoint = { kind: 'unix', socketPath: match[2] };
    for (const variable of tlsGiven)
      issues.push({
        variable,
        message: `is only used with a tcp:// engine, and ${hostVariable} is a unix socket`,
      });
  } else if (match?.[3] && match[4]) {
    const port = Number(match[4]);
    if (port < 1 || port > 65535) issues.push({ variable: hostVariable, message: 'port must be 1-65535' });
    if (tlsGiven.length !== 1) {
      issues.push({
        variable: tlsGiven.length === 0 ? hostVariable : tlsGiven.join(', '),
        message:
          tlsGiven.length === 0
            ? 'is a tcp:// engine: set SVK_DOCKER_TLS_SECRET (or SVK_DOCKER_CERT_PATH locally) for TLS client authentication'
            : 'set only one of them',
      });
    }
    const tls = values.SVK_DOCKER_TLS_SECRET
      ? { secret: values.SVK_DOCKER_TLS_SECRET }
      : values.SVK_DOCKER_CERT_PATH
        ? { certPath: values.SVK_DOCKER_CERT_PATH }
        : undefined;
    if (tls) endpoint = { kind: 'tcp', host: match[3].replace(/^\[|\]$/g, ''), port, tls };
  }
  if (issues.length > 0 || !endpoint) return { ok: false, issues };
  const v = values as Variables;
  return {
    ok: true,
    settings: {
      endpoint,
      network: v.SVK_DOCKER_NETWORK,
      infraImage: v.SVK_DOCKER_INFRA_IMAGE,
      pullTimeoutMs: v.SVK_DOCKER_PULL_TIMEOUT_SECONDS * 1000,
      ...(v.SVK_DOCKER_HOST_IP ? { hostIp: v.SVK_DOCKER_HOST_IP } : {}),
    },
  };
}
