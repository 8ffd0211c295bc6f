import * as z from 'zod/mini';
import packageJson from '../../package.json' with { type: 'json' };
import { isProviderName, PROVIDER_NAMES, type ProviderName } from '../provider/registry.ts';
import { isRelease } from '../release/release.ts';
import { parseHostPort } from '../util/host-port.ts';
import { addIssue } from '../util/zod-mini.ts';
import { pairs, secretsManagerSecret, type Variables, wholeNumber } from './env-parsing.ts';
import { dns1123SubdomainError } from './kube-validation.ts';
import { KUBELET_API_VARIABLES } from './kubelet-api-config.ts';
import { capacitySchema, labelsSchema, NODE_RANGES, taintSchema } from './node-settings.ts';

/**
 * Every environment variable of the functions (the provider's own come from
 * its settings module), each with its one rule and its one default.
 */

/**
 * The release of this code: package.json's version, so that bumping it is
 * the one step of cutting a release.
 */
export const PACKAGE_RELEASE: string = packageJson.version;
/** Raise with the release whose reconciled state older releases must not act on. */
export const DEFAULT_MIN_COMPATIBLE_RELEASE = '0.1.0';
/** Raise with the release whose functions need state reconciled by a reconciler of at least that release. */
export const DEFAULT_REQUIRED_RECONCILER_RELEASE = '0.1.0';

function release(defaultValue: string) {
  return z._default(
    z.string().check(z.trim(), z.refine(isRelease, 'must be a version like 1.2.3 (major.minor.patch)')),
    defaultValue,
  );
}

/** A string, trimmed, then checked. */
function trimmed(...checks: z.core.$ZodCheck<string>[]) {
  return z.string().check(z.trim(), ...checks);
}

const nodeNames = z.pipe(
  z._default(z.string(), 'virtual-kubelet'),
  z.transform((raw: string, ctx) => {
    const names = raw
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    if (names.length === 0) addIssue(ctx, 'must name at least one node');
    for (const name of names) {
      const error = dns1123SubdomainError(name);
      if (error) addIssue(ctx, `"${name}" is not a valid node name: ${error}`);
    }
    if (new Set(names).size !== names.length) addIssue(ctx, 'names a node twice');
    return names;
  }),
);

const labels = z.pipe(
  z.pipe(
    z._default(z.string(), ''),
    z.transform((raw: string) => Object.fromEntries(pairs(raw))),
  ),
  labelsSchema,
);

const capacity = z.pipe(
  z.pipe(
    z._default(z.string(), 'cpu=20,memory=100Gi,pods=110,ephemeral-storage=100Gi'),
    z.transform((raw: string): Record<string, string | number> => Object.fromEntries(pairs(raw))),
  ),
  capacitySchema,
);

/** `key[=value]:Effect,...`; undefined when not set (the provider's default taint applies), [] when empty. */
const taints = z.pipe(
  z.pipe(
    z.optional(z.string()),
    z.transform((raw: string | undefined, ctx) => {
      if (raw === undefined) return undefined;
      const result: Array<{ key: string; value?: string; effect: string }> = [];
      for (const spec of raw
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t.length > 0)) {
        const match = /^([^=:]+)(?:=([^:]*))?:([A-Za-z]+)$/.exec(spec);
        if (!match) {
          addIssue(ctx, `"${spec}" is not key[=value]:Effect`);
          continue;
        }
        const [, key = '', value, effect = ''] = match;
        result.push({ key, ...(value === undefined ? {} : { value }), effect });
      }
      return result;
    }),
  ),
  z.optional(z.array(taintSchema)),
);

const provider = z.pipe(
  z._default(trimmed(), 'mock'),
  z.transform((name: string, ctx): ProviderName => {
    if (isProviderName(name)) return name;
    addIssue(ctx, `must be one of: ${PROVIDER_NAMES.join(', ')}`);
    return z.NEVER;
  }),
);

/** What a tick invocation does (lib/tick/tick-entry.ts). */
export const TICK_PART_NAMES = ['heartbeat', 'pod-watch', 'pod-status', 'reconcile'] as const;
export type TickPartName = (typeof TICK_PART_NAMES)[number];

function isTickPartName(name: string): name is TickPartName {
  return (TICK_PART_NAMES as readonly string[]).includes(name);
}

const tickParts = z.pipe(
  z._default(z.string(), TICK_PART_NAMES.join(',')),
  z.transform((raw: string, ctx): TickPartName[] => {
    const names = raw
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    if (names.length === 0) addIssue(ctx, 'must name at least one part');
    const parts: TickPartName[] = [];
    for (const part of names) {
      if (isTickPartName(part)) parts.push(part);
      else addIssue(ctx, `"${part}" is not one of ${TICK_PART_NAMES.join(', ')}`);
    }
    if (new Set(parts).size !== parts.length) addIssue(ctx, 'names a part twice');
    return parts;
  }),
);

function name(message: string) {
  return trimmed(z.refine((v: string) => dns1123SubdomainError(v) === undefined, message));
}

/** The functions' environment variables and their rules (see the table of docs/configuration.md). */
export const ENV_VARIABLES = {
  SVK_PROVIDER: provider,
  SVK_NODE_NAMES: nodeNames,
  SVK_NODE_LABELS: labels,
  SVK_NODE_TAINTS: taints,
  SVK_NODE_CAPACITY: capacity,
  SVK_NODE_OS: z._default(z.enum(['linux', 'windows'], { message: 'must be linux or windows' }), 'linux'),
  SVK_NODE_INTERNAL_IP: z.optional(z.ipv4({ message: 'must be an IPv4 address' })),
  SVK_KUBELET_PORT: wholeNumber(10250, ...NODE_RANGES.kubeletPort),
  SVK_NODE_LEASE_DURATION_SECONDS: wholeNumber(40, ...NODE_RANGES.leaseDurationSeconds),
  SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS: wholeNumber(10, ...NODE_RANGES.leaseRenewIntervalSeconds),
  SVK_NODE_STATUS_INTERVAL_SECONDS: wholeNumber(300, ...NODE_RANGES.statusIntervalSeconds),
  SVK_PING_INTERVAL_SECONDS: wholeNumber(10, ...NODE_RANGES.pingIntervalSeconds),
  SVK_HEARTBEAT_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_LOCK_TTL_SECONDS: wholeNumber(15, 2, 600),
  SVK_LOCK_POLL_MS: wholeNumber(1000, 50, 60000),
  SVK_POD_CLAIM_SECONDS: wholeNumber(30, 5, 900),
  SVK_POD_FORCE_DELETE_HANDOFF_SECONDS: wholeNumber(300, 0, 3600),
  SVK_POD_STATUS_INTERVAL_SECONDS: wholeNumber(5, 1, 60),
  SVK_POD_DANGLING_INTERVAL_SECONDS: wholeNumber(300, 10, 86400),
  SVK_POD_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_POD_API_SERVER: z.optional(
    trimmed(
      z.refine(
        (v: string) => !('problem' in parseHostPort(v)),
        'must be host:port (an IPv4 address, [IPv6 address] or DNS name, and a port 1-65535), such as 10.88.0.1:6443',
      ),
    ),
  ),
  SVK_NODE_CONFIG_NAMESPACE: z._default(name('must be a namespace name'), 'kube-system'),
  SVK_NODE_CONFIG_NAME: z.optional(name('must be a ConfigMap name')),
  SVK_NODE_CONFIG_TRIAL_SECONDS: wholeNumber(600, 0, 86400),
  SVK_TABLE_NAME: z._default(
    trimmed(z.minLength(3, 'must be a DynamoDB table name')),
    'serverless-virtual-kubelet',
  ),
  SVK_DYNAMODB_ENDPOINT: z.optional(z.url({ message: 'must be a URL' })),
  SVK_EVENT_BUS_NAME: z._default(
    trimmed(
      z.regex(
        /^([/.\-_A-Za-z0-9]{1,256}|arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[/.\-_A-Za-z0-9]{1,256})$/,
        'must be an EventBridge event bus name or ARN',
      ),
    ),
    'default',
  ),
  SVK_DLQ_URL: z.optional(z.url({ protocol: /^https?$/, message: 'must be the https URL of an SQS queue' })),
  SVK_TICK_QUEUE_URL: z.optional(
    z
      .url({ protocol: /^https?$/, message: 'must be the https URL of an SQS FIFO queue' })
      .check(
        z.refine((url: string) => url.endsWith('.fifo'), 'must be the URL of a FIFO queue (ending in .fifo)'),
      ),
  ),
  SVK_TICK_PARTS: tickParts,
  SVK_TICK_WORK_MS: wholeNumber(6000, 500, 60000),
  SVK_POD_WATCH_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_POD_WATCH_TIMEOUT_SECONDS: wholeNumber(60, 5, 600),
  SVK_POD_WATCH_FLUSH_MS: wholeNumber(200, 0, 10000),
  SVK_POD_WATCH_BOOKMARK_INTERVAL_MS: wholeNumber(1000, 0, 60000),
  AWS_REGION: z._default(trimmed(z.minLength(1)), 'us-east-1'),
  // The function role's credentials, which Lambda sets and the SDK clients read themselves: checked as a pair only.
  AWS_ACCESS_KEY_ID: z.optional(trimmed()),
  AWS_SECRET_ACCESS_KEY: z.optional(z.string()),
  AWS_SESSION_TOKEN: z.optional(z.string()),
  SVK_KUBECONFIG: z.optional(trimmed(z.minLength(1, 'must be a path'))),
  SVK_KUBECONFIG_SECRET: secretsManagerSecret(),
  SVK_KUBECONFIG_PARAMETER: z.optional(
    trimmed(
      z.regex(
        /^(\/?[A-Za-z0-9/_.-]{1,2048}|arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter\/[A-Za-z0-9/_.-]+)$/,
        'must be an SSM parameter name or ARN',
      ),
    ),
  ),
  SVK_EKS_CLUSTER_NAME: z.optional(
    trimmed(z.regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'must be an EKS cluster name')),
  ),
  SVK_EKS_ENDPOINT: z.optional(z.url({ protocol: /^https$/, message: 'must be an https URL' })),
  SVK_EKS_CA_DATA: z.optional(
    trimmed(
      z.regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be the base64 certificate authority data of the cluster'),
    ),
  ),
  SVK_KUBE_REQUEST_TIMEOUT_MS: wholeNumber(5000, 100, 120000),
  SVK_METRICS: z._default(z.enum(['emf', 'off'], { message: 'must be emf or off' }), 'off'),
  SVK_METRICS_NAMESPACE: z._default(
    trimmed(
      z.regex(/^[A-Za-z0-9._/#:-]{1,255}$/, 'must be a CloudWatch namespace (letters, digits, . _ / # : -)'),
      z.refine((v: string) => !v.startsWith('AWS/'), 'must not start with AWS/'),
    ),
    'ServerlessVirtualKubelet',
  ),
  SVK_METRICS_NODE_DIMENSION: z.pipe(
    z._default(z.enum(['true', 'false'], { message: 'must be true or false' }), 'true'),
    z.transform((v: 'true' | 'false') => v === 'true'),
  ),
  SVK_DEPLOYMENT_NAME: z._default(
    trimmed(z.regex(/^[A-Za-z0-9._-]{1,255}$/, 'must be letters, digits, . _ -')),
    'serverless-virtual-kubelet',
  ),
  SVK_SERVICE_NAME: z._default(
    trimmed(z.regex(/^[A-Za-z0-9._-]{1,255}$/, 'must be letters, digits, . _ -')),
    'serverless-virtual-kubelet',
  ),
  SVK_LOG_LEVEL: z._default(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'must be one of fatal, error, warn, info, debug, trace, silent',
    }),
    'info',
  ),
  SVK_RELEASE: release(PACKAGE_RELEASE),
  SVK_MIN_COMPATIBLE_RELEASE: release(DEFAULT_MIN_COMPATIBLE_RELEASE),
  SVK_REQUIRED_RECONCILER_RELEASE: release(DEFAULT_REQUIRED_RECONCILER_RELEASE),
  SVK_RELEASE_RECORD_TTL_SECONDS: wholeNumber(300, 10, 86400),
  SVK_RELEASE_STATUS_CACHE_SECONDS: wholeNumber(10, 0, 3600),
  SVK_RECONCILE_INTERVAL_SECONDS: wholeNumber(30, 1, 3600),
  SVK_RECONCILE_LEADER_WAIT_MS: wholeNumber(5000, 0, 120000),
  SVK_RECONCILE_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_RECONCILE_RESYNC_GRACE_SECONDS: wholeNumber(60, 0, 3600),
  ...KUBELET_API_VARIABLES,
};

/** The parsed values of {@link ENV_VARIABLES}. */
export type EnvValues = Variables<typeof ENV_VARIABLES>;
