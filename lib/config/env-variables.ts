import * as z from 'zod';
import packageJson from '../../package.json' with { type: 'json' };
import { isProviderName, PROVIDER_NAMES, type ProviderName } from '../provider/registry.ts';
import { isRelease } from '../release/release.ts';
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
  return z
    .string()
    .trim()
    .refine(isRelease, 'must be a version like 1.2.3 (major.minor.patch)')
    .default(defaultValue);
}

const nodeNames = z
  .string()
  .default('virtual-kubelet')
  .transform((raw, ctx) => {
    const names = raw
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    if (names.length === 0) ctx.addIssue({ code: 'custom', message: 'must name at least one node' });
    for (const name of names) {
      const error = dns1123SubdomainError(name);
      if (error) ctx.addIssue({ code: 'custom', message: `"${name}" is not a valid node name: ${error}` });
    }
    if (new Set(names).size !== names.length) ctx.addIssue({ code: 'custom', message: 'names a node twice' });
    return names;
  });

const labels = z
  .string()
  .default('')
  .transform((raw) => Object.fromEntries(pairs(raw)))
  .pipe(labelsSchema);

const capacity = z
  .string()
  .default('cpu=20,memory=100Gi,pods=110,ephemeral-storage=100Gi')
  .transform((raw): Record<string, string | number> => Object.fromEntries(pairs(raw)))
  .pipe(capacitySchema);

/** `key[=value]:Effect,...`; undefined when not set (the provider's default taint applies), [] when empty. */
const taints = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return undefined;
    const result: Array<{ key: string; value?: string; effect: string }> = [];
    for (const spec of raw
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t.length > 0)) {
      const match = /^([^=:]+)(?:=([^:]*))?:([A-Za-z]+)$/.exec(spec);
      if (!match) {
        ctx.addIssue({ code: 'custom', message: `"${spec}" is not key[=value]:Effect` });
        continue;
      }
      const [, key = '', value, effect = ''] = match;
      result.push({ key, ...(value === undefined ? {} : { value }), effect });
    }
    return result;
  })
  .pipe(z.array(taintSchema).optional());

const provider = z
  .string()
  .trim()
  .default('mock')
  .transform((name, ctx): ProviderName => {
    if (isProviderName(name)) return name;
    ctx.addIssue({ code: 'custom', message: `must be one of: ${PROVIDER_NAMES.join(', ')}` });
    return z.NEVER;
  });

/** What a tick invocation does (lib/tick/tick-entry.ts). */
export const TICK_PART_NAMES = ['heartbeat', 'pod-watch', 'pod-status', 'reconcile'] as const;
export type TickPartName = (typeof TICK_PART_NAMES)[number];

function isTickPartName(name: string): name is TickPartName {
  return (TICK_PART_NAMES as readonly string[]).includes(name);
}

const tickParts = z
  .string()
  .default(TICK_PART_NAMES.join(','))
  .transform((raw, ctx): TickPartName[] => {
    const names = raw
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    if (names.length === 0) ctx.addIssue({ code: 'custom', message: 'must name at least one part' });
    const parts: TickPartName[] = [];
    for (const part of names) {
      if (isTickPartName(part)) parts.push(part);
      else ctx.addIssue({ code: 'custom', message: `"${part}" is not one of ${TICK_PART_NAMES.join(', ')}` });
    }
    if (new Set(parts).size !== parts.length) ctx.addIssue({ code: 'custom', message: 'names a part twice' });
    return parts;
  });

function name(message: string) {
  return z
    .string()
    .trim()
    .refine((v) => dns1123SubdomainError(v) === undefined, message);
}

/** The functions' environment variables and their rules (see the README's table). */
export const ENV_VARIABLES = {
  SVK_PROVIDER: provider,
  SVK_NODE_NAMES: nodeNames,
  SVK_NODE_LABELS: labels,
  SVK_NODE_TAINTS: taints,
  SVK_NODE_CAPACITY: capacity,
  SVK_NODE_OS: z.enum(['linux', 'windows'], { message: 'must be linux or windows' }).default('linux'),
  SVK_NODE_INTERNAL_IP: z.ipv4({ message: 'must be an IPv4 address' }).optional(),
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
  SVK_NODE_CONFIG_NAMESPACE: name('must be a namespace name').default('kube-system'),
  SVK_NODE_CONFIG_NAME: name('must be a ConfigMap name').optional(),
  SVK_NODE_CONFIG_TRIAL_SECONDS: wholeNumber(600, 0, 86400),
  SVK_TABLE_NAME: z
    .string()
    .trim()
    .min(3, 'must be a DynamoDB table name')
    .default('serverless-virtual-kubelet'),
  SVK_DYNAMODB_ENDPOINT: z.url({ message: 'must be a URL' }).optional(),
  SVK_EVENT_BUS_NAME: z
    .string()
    .trim()
    .regex(
      /^([/.\-_A-Za-z0-9]{1,256}|arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[/.\-_A-Za-z0-9]{1,256})$/,
      'must be an EventBridge event bus name or ARN',
    )
    .default('default'),
  SVK_DLQ_URL: z.url({ protocol: /^https?$/, message: 'must be the https URL of an SQS queue' }).optional(),
  SVK_TICK_QUEUE_URL: z
    .url({ protocol: /^https?$/, message: 'must be the https URL of an SQS FIFO queue' })
    .refine((url) => url.endsWith('.fifo'), 'must be the URL of a FIFO queue (ending in .fifo)')
    .optional(),
  SVK_TICK_PARTS: tickParts,
  SVK_TICK_WORK_MS: wholeNumber(6000, 500, 60000),
  SVK_POD_WATCH_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_POD_WATCH_TIMEOUT_SECONDS: wholeNumber(60, 5, 600),
  SVK_POD_WATCH_FLUSH_MS: wholeNumber(200, 0, 10000),
  SVK_POD_WATCH_BOOKMARK_INTERVAL_MS: wholeNumber(1000, 0, 60000),
  AWS_REGION: z.string().trim().min(1).default('us-east-1'),
  // The function role's credentials, which Lambda sets (lib/aws/credentials.ts).
  AWS_ACCESS_KEY_ID: z.string().trim().optional(),
  AWS_SECRET_ACCESS_KEY: z.string().optional(),
  AWS_SESSION_TOKEN: z.string().optional(),
  // Any of these makes DynamoDB's endpoint the SDK rules' (lib/state/dynamodb-wire.ts).
  AWS_USE_FIPS_ENDPOINT: z.string().optional(),
  AWS_USE_DUALSTACK_ENDPOINT: z.string().optional(),
  AWS_ENDPOINT_URL: z.string().optional(),
  AWS_ENDPOINT_URL_DYNAMODB: z.string().optional(),
  SVK_KUBECONFIG: z.string().trim().min(1, 'must be a path').optional(),
  SVK_KUBECONFIG_SECRET: secretsManagerSecret(),
  SVK_KUBECONFIG_PARAMETER: z
    .string()
    .trim()
    .regex(
      /^(\/?[A-Za-z0-9/_.-]{1,2048}|arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter\/[A-Za-z0-9/_.-]+)$/,
      'must be an SSM parameter name or ARN',
    )
    .optional(),
  SVK_EKS_CLUSTER_NAME: z
    .string()
    .trim()
    .regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'must be an EKS cluster name')
    .optional(),
  SVK_EKS_ENDPOINT: z.url({ protocol: /^https$/, message: 'must be an https URL' }).optional(),
  SVK_EKS_CA_DATA: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be the base64 certificate authority data of the cluster')
    .optional(),
  SVK_KUBE_REQUEST_TIMEOUT_MS: wholeNumber(5000, 100, 120000),
  SVK_METRICS: z.enum(['emf', 'off'], { message: 'must be emf or off' }).default('off'),
  SVK_METRICS_NAMESPACE: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9._/#:-]{1,255}$/, 'must be a CloudWatch namespace (letters, digits, . _ / # : -)')
    .refine((v) => !v.startsWith('AWS/'), 'must not start with AWS/')
    .default('ServerlessVirtualKubelet'),
  SVK_METRICS_NODE_DIMENSION: z
    .enum(['true', 'false'], { message: 'must be true or false' })
    .default('true')
    .transform((v) => v === 'true'),
  SVK_DEPLOYMENT_NAME: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9._-]{1,255}$/, 'must be letters, digits, . _ -')
    .default('serverless-virtual-kubelet'),
  SVK_LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
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
