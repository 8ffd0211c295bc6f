import { z } from 'zod';
import packageJson from '../../package.json' with { type: 'json' };
import { isQuantity } from '../kube/quantity.ts';
import { isRelease, releaseLessThan } from '../release/release.ts';
import {
  dns1123SubdomainError,
  labelValueError,
  qualifiedNameError,
  TAINT_EFFECTS,
  type TaintEffect,
} from './kube-validation.ts';

/** A taint the virtual node carries. */
export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
}

/** Settings of the virtual nodes that an assigned config may later override. */
export interface NodeSettings {
  labels: Record<string, string>;
  taints: Taint[];
  /** Capacity (and allocatable) quantities, e.g. `{ cpu: '20', memory: '100Gi', pods: '110' }`. */
  capacity: Record<string, string>;
  operatingSystem: string;
  internalIp?: string;
  kubeletPort: number;
  leaseDurationSeconds: number;
  leaseRenewIntervalMs: number;
  statusIntervalMs: number;
  pingIntervalMs: number;
}

/** The whole configuration, parsed and validated once at cold start. */
export interface Config {
  provider: 'mock';
  nodeNames: string[];
  node: NodeSettings;
  heartbeat: {
    /** Nodes renewed at once by one invocation. */
    maxParallel: number;
    /** The loop stops this long before the invocation's deadline to hand over cleanly. */
    stopBeforeDeadlineMs: number;
  };
  lock: {
    /** A lock whose record does not change for this long is taken over. */
    ttlMs: number;
    /** How often a waiting contender re-reads the lock record. */
    pollMs: number;
  };
  pods: {
    /**
     * How long a pod-sync invocation's claim on a pod (taken before it calls
     * the provider) keeps others waiting; after it, a crashed claimant is
     * taken over. Must exceed the slowest provider create/update.
     */
    claimMs: number;
    /** pod-status polls the provider and writes changed statuses this often. */
    statusIntervalMs: number;
    /** pod-status looks for dangling provider pods when it takes over, then this often. */
    danglingIntervalMs: number;
    /** Status writes, force deletes and dangling deletes in flight at once. */
    maxParallel: number;
    /** The pod-status loop stops this long before the invocation's deadline to hand over cleanly. */
    statusStopBeforeDeadlineMs: number;
  };
  /** The assigned node config (lib/node-config/): a ConfigMap shared by all nodes of the deployment. */
  nodeConfig: {
    /** The ConfigMap; dynamic configuration is off (local config only) when undefined. */
    source?: { namespace: string; name: string };
    /** How long an assigned config runs before it becomes the last-known-good. */
    trialMs: number;
  };
  dynamodb: { tableName: string; endpoint?: string; region: string };
  events: {
    /** Name or ARN of the EventBridge bus pod events are published to. */
    busName: string;
    /** URL of pod-sync's SQS dead-letter queue, read by the status command; absent locally. */
    deadLetterQueueUrl?: string;
  };
  podWatch: {
    /** Nodes watched at once by one invocation; the others wait for a free slot or another invocation. */
    maxParallel: number;
    /** The watcher stops this long before the invocation's deadline to publish, save its bookmark and hand over. */
    stopBeforeDeadlineMs: number;
    /** Longest single watch request; the API server sends a bookmark 2 s before it ends. */
    watchTimeoutSeconds: number;
    /** How long a received event may wait for others to fill a batch of 10. */
    flushMs: number;
    /** Minimum time between two bookmark writes of one node (always written at the end). */
    bookmarkIntervalMs: number;
  };
  /** Cluster access: at most one of a kubeconfig file, secret, parameter or EKS cluster (lib/kube/credentials.ts). */
  kube: {
    kubeconfigPath?: string;
    /** Secrets Manager secret (name or ARN) whose SecretString is the kubeconfig. */
    kubeconfigSecret?: string;
    /** SSM parameter (name or ARN), typically a SecureString, whose value is the kubeconfig. */
    kubeconfigParameter?: string;
    /** EKS IAM authentication; endpoint and CA from eks:DescribeCluster when not given. */
    eks?: { clusterName: string; endpoint?: string; caData?: string };
    requestTimeoutMs: number;
  };
  /** CloudWatch Embedded Metric Format lines on stdout (lib/metrics/emf.ts). */
  metrics: {
    enabled: boolean;
    namespace: string;
    /** Value of the Deployment dimension. */
    deployment: string;
    /** LeaseRenewalLag also per node (one custom metric per node). */
    perNode: boolean;
  };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The release of this code (`major.minor.patch`), used by the reconciler's gating. */
  release: string;
  /** Rolling-upgrade gating (seed 004): see README, "Reconciler and rolling upgrades". */
  gating: {
    /** The reconciler of this release raises the status's minimum compatible release to this. */
    minCompatibleRelease: string;
    /** Functions of this release act only on state reconciled by at least this release. */
    requiredReconcilerRelease: string;
    /** One record of a running release counts this long; longer than the longest invocation. */
    releaseRecordTtlMs: number;
    /** A reconciler status that lets this release act is reused this long per cold start (0: never). */
    statusCacheMs: number;
  };
  reconcile: {
    /** The leader runs reconcileAll this often after the first success. */
    intervalMs: number;
    /** A new leader waits this long when a status exists (the previous leader's requests in flight). */
    leaderWaitMs: number;
    /** The leader stops this long before the invocation's deadline, handing over. */
    stopBeforeDeadlineMs: number;
    /** Pods created or deleted less than this long ago are left to their events. */
    resyncGraceMs: number;
  };
}

/** One environment variable that failed validation. */
export interface ConfigIssue {
  variable: string;
  message: string;
}

/** Invalid configuration. The message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly issues: ConfigIssue[]) {
    super(`invalid configuration: ${issues.map((i) => `${i.variable} ${i.message}`).join('; ')}`);
  }
}

export const DEFAULT_TAINT_KEY = 'virtual-kubelet.io/provider';

/** A whole number within [min, max]: the one range rule for a setting, from the environment or a ConfigMap. */
function bounded(min: number, max: number) {
  return z
    .number({ message: 'must be a whole number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);
}

function wholeNumber(defaultValue: number, min: number, max: number) {
  return z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(bounded(min, max))
    .default(defaultValue);
}

/** Parses `a=b,c=d` into ordered pairs; empty input is no pairs. */
function pairs(raw: string): Array<[string, string]> {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      const eq = part.indexOf('=');
      return eq < 0 ? [part, ''] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    });
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

/*
 * The node settings' value rules, shared by the environment (local config)
 * and the assigned config (a ConfigMap, lib/node-config/): each environment
 * variable parses its string form into the value these schemas validate.
 */

const labelsSchema = z.record(z.string(), z.string()).superRefine((labels, ctx) => {
  for (const [key, value] of Object.entries(labels)) {
    const keyError = qualifiedNameError(key);
    if (keyError) ctx.addIssue({ code: 'custom', message: `label key "${key}": ${keyError}` });
    const valueError = labelValueError(value);
    if (valueError)
      ctx.addIssue({ code: 'custom', message: `label "${key}" value "${value}": ${valueError}` });
  }
});

// YAML writes `cpu: 4` as a number; a quantity is its string form.
const quantityValue = z.union([z.string(), z.number().transform(String)]);

const capacitySchema = z.record(z.string(), quantityValue).superRefine((capacity, ctx) => {
  for (const [name, quantity] of Object.entries(capacity)) {
    const nameError = qualifiedNameError(name);
    if (nameError) ctx.addIssue({ code: 'custom', message: `resource name "${name}": ${nameError}` });
    if (!isQuantity(quantity)) {
      ctx.addIssue({
        code: 'custom',
        message: `"${name}=${quantity}" is not a resource quantity (e.g. 4, 500m, 16Gi)`,
      });
    }
  }
  if (!('pods' in capacity)) ctx.addIssue({ code: 'custom', message: 'must include pods (e.g. pods=110)' });
});

const taintSchema = z
  .object({ key: z.string(), value: z.string().optional(), effect: z.string() })
  .superRefine((t, ctx) => {
    const keyError = qualifiedNameError(t.key);
    if (keyError) ctx.addIssue({ code: 'custom', message: `taint key "${t.key}": ${keyError}` });
    const valueError = t.value === undefined ? undefined : labelValueError(t.value);
    if (valueError) {
      ctx.addIssue({ code: 'custom', message: `taint "${t.key}" value "${t.value}": ${valueError}` });
    }
    if (!(TAINT_EFFECTS as readonly string[]).includes(t.effect)) {
      ctx.addIssue({
        code: 'custom',
        message: `taint "${t.key}" effect "${t.effect}" must be one of ${TAINT_EFFECTS.join(', ')}`,
      });
    }
  })
  .transform(
    (t): Taint => ({
      key: t.key,
      ...(t.value === undefined ? {} : { value: t.value }),
      effect: t.effect as TaintEffect,
    }),
  );

/** Ranges of the node settings given in whole seconds (or a port). */
const NODE_RANGES = {
  kubeletPort: [1, 65535],
  leaseDurationSeconds: [10, 3600],
  leaseRenewIntervalSeconds: [1, 1200],
  statusIntervalSeconds: [1, 3600],
  pingIntervalSeconds: [1, 600],
} as const satisfies Record<string, readonly [number, number]>;

/**
 * The node settings an assigned config (a ConfigMap) may set, with the same
 * value rules as their environment variables. Every field is optional: those
 * set replace the local config's, the others keep it. Unknown fields are
 * rejected, so a typo never passes silently.
 */
export const nodeConfigDocumentSchema = z.strictObject({
  labels: labelsSchema.optional(),
  taints: z.array(taintSchema).optional(),
  capacity: capacitySchema.optional(),
  leaseDurationSeconds: bounded(...NODE_RANGES.leaseDurationSeconds).optional(),
  leaseRenewIntervalSeconds: bounded(...NODE_RANGES.leaseRenewIntervalSeconds).optional(),
  statusIntervalSeconds: bounded(...NODE_RANGES.statusIntervalSeconds).optional(),
  pingIntervalSeconds: bounded(...NODE_RANGES.pingIntervalSeconds).optional(),
});

/** A validated assigned node config: the settings it overrides. */
export type NodeConfigDocument = z.infer<typeof nodeConfigDocumentSchema>;

/** Why a lease duration does not fit its renew interval, or undefined. */
export function leaseRuleError(leaseSeconds: number, renewSeconds: number): string | undefined {
  return leaseSeconds > 3 * renewSeconds
    ? undefined
    : `(${leaseSeconds}) must exceed 3 renew intervals (renew interval ${renewSeconds}s)`;
}

/** One setting of a node config document that failed validation. */
export interface NodeConfigIssue {
  /** The document's field, e.g. `capacity` or `leaseDurationSeconds`. */
  field: string;
  message: string;
}

/**
 * Validates an assigned node config document (already parsed from YAML or
 * JSON) and lays it over the local settings. Returns the settings to use, or
 * every issue found (naming each bad field) when the document is invalid.
 */
export function applyNodeConfigDocument(
  local: NodeSettings,
  raw: unknown,
):
  | { ok: true; document: NodeConfigDocument; settings: NodeSettings }
  | { ok: false; issues: NodeConfigIssue[] } {
  const parsed = nodeConfigDocumentSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      ok: false,
      issues: parsed.error.issues.map((issue) => ({
        field: issue.path.length > 0 ? issue.path.map(String).join('.') : 'document',
        message: issue.message,
      })),
    };
  }
  const d = parsed.data;
  const settings: NodeSettings = {
    ...local,
    ...(d.labels ? { labels: d.labels } : {}),
    ...(d.taints ? { taints: d.taints } : {}),
    ...(d.capacity ? { capacity: d.capacity } : {}),
    ...(d.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: d.leaseDurationSeconds } : {}),
    ...(d.leaseRenewIntervalSeconds !== undefined
      ? { leaseRenewIntervalMs: d.leaseRenewIntervalSeconds * 1000 }
      : {}),
    ...(d.statusIntervalSeconds !== undefined ? { statusIntervalMs: d.statusIntervalSeconds * 1000 } : {}),
    ...(d.pingIntervalSeconds !== undefined ? { pingIntervalMs: d.pingIntervalSeconds * 1000 } : {}),
  };
  const leaseError = leaseRuleError(settings.leaseDurationSeconds, settings.leaseRenewIntervalMs / 1000);
  if (leaseError) return { ok: false, issues: [{ field: 'leaseDurationSeconds', message: leaseError }] };
  return { ok: true, document: d, settings };
}

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

function taints(providerName: string) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined) return [{ key: DEFAULT_TAINT_KEY, value: providerName, effect: 'NoSchedule' }];
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
    .pipe(z.array(taintSchema));
}

/**
 * The release of this code: package.json's version, so that bumping it is
 * the one step of cutting a release.
 */
export const PACKAGE_RELEASE: string = packageJson.version;
/**
 * Raise with the release whose reconciled state older releases must not act
 * on (seed 004's minApiserverRelease).
 */
export const DEFAULT_MIN_COMPATIBLE_RELEASE = '0.1.0';
/**
 * Raise with the release whose functions need state reconciled by a
 * reconciler of at least that release (seed 004's minReconcilerRelease).
 */
export const DEFAULT_REQUIRED_RECONCILER_RELEASE = '0.1.0';

function release(defaultValue: string) {
  return z
    .string()
    .trim()
    .refine(isRelease, 'must be a version like 1.2.3 (major.minor.patch)')
    .default(defaultValue);
}

const ipv4 = z.ipv4({ message: 'must be an IPv4 address' }).optional();

const envSchema = z.object({
  SVK_PROVIDER: z.enum(['mock'], { message: 'must be one of: mock' }).default('mock'),
  SVK_NODE_NAMES: nodeNames,
  SVK_NODE_LABELS: labels,
  SVK_NODE_CAPACITY: capacity,
  SVK_NODE_OS: z.enum(['linux', 'windows'], { message: 'must be linux or windows' }).default('linux'),
  SVK_NODE_INTERNAL_IP: ipv4,
  SVK_KUBELET_PORT: wholeNumber(10250, ...NODE_RANGES.kubeletPort),
  SVK_NODE_LEASE_DURATION_SECONDS: wholeNumber(40, ...NODE_RANGES.leaseDurationSeconds),
  SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS: wholeNumber(10, ...NODE_RANGES.leaseRenewIntervalSeconds),
  SVK_NODE_STATUS_INTERVAL_SECONDS: wholeNumber(60, ...NODE_RANGES.statusIntervalSeconds),
  SVK_PING_INTERVAL_SECONDS: wholeNumber(10, ...NODE_RANGES.pingIntervalSeconds),
  SVK_HEARTBEAT_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_LOCK_TTL_SECONDS: wholeNumber(15, 2, 600),
  SVK_LOCK_POLL_MS: wholeNumber(1000, 50, 60000),
  SVK_POD_CLAIM_SECONDS: wholeNumber(30, 5, 900),
  SVK_POD_STATUS_INTERVAL_SECONDS: wholeNumber(5, 1, 60),
  SVK_POD_DANGLING_INTERVAL_SECONDS: wholeNumber(300, 10, 86400),
  SVK_POD_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_NODE_CONFIG_NAMESPACE: z
    .string()
    .trim()
    .refine((v) => dns1123SubdomainError(v) === undefined, 'must be a namespace name')
    .default('kube-system'),
  SVK_NODE_CONFIG_NAME: z
    .string()
    .trim()
    .refine((v) => dns1123SubdomainError(v) === undefined, 'must be a ConfigMap name')
    .optional(),
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
  SVK_POD_WATCH_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_POD_WATCH_TIMEOUT_SECONDS: wholeNumber(60, 5, 600),
  SVK_POD_WATCH_FLUSH_MS: wholeNumber(200, 0, 10000),
  SVK_POD_WATCH_BOOKMARK_INTERVAL_MS: wholeNumber(1000, 0, 60000),
  AWS_REGION: z.string().trim().min(1).default('us-east-1'),
  SVK_KUBECONFIG: z.string().trim().min(1, 'must be a path').optional(),
  SVK_KUBECONFIG_SECRET: z
    .string()
    .trim()
    .regex(
      /^([A-Za-z0-9/_+=.@-]{1,512}|arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+)$/,
      'must be a Secrets Manager secret name or ARN',
    )
    .optional(),
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
});

const DEFAULTS = {
  lease: 40,
  renew: 10,
  lockTtl: 15,
  lockPoll: 1000,
  releaseRecordTtl: 300,
  releaseStatusCache: 10,
};

/** Rules between variables, checked on whatever of them parses, so every bad variable is named at once. */
function crossChecks(env: Record<string, string | undefined>): ConfigIssue[] {
  const num = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined) return fallback;
    return /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  };
  const issues: ConfigIssue[] = [];
  const lease = num('SVK_NODE_LEASE_DURATION_SECONDS', DEFAULTS.lease);
  const renew = num('SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS', DEFAULTS.renew);
  if (Number.isFinite(lease) && Number.isFinite(renew) && leaseRuleError(lease, renew)) {
    issues.push({
      variable: 'SVK_NODE_LEASE_DURATION_SECONDS',
      message: `(${lease}) must exceed 3 renew intervals (SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS=${renew})`,
    });
  }
  const lockTtl = num('SVK_LOCK_TTL_SECONDS', DEFAULTS.lockTtl);
  const lockPoll = num('SVK_LOCK_POLL_MS', DEFAULTS.lockPoll);
  if (lockPoll >= lockTtl * 1000) {
    issues.push({
      variable: 'SVK_LOCK_POLL_MS',
      message: `must be shorter than SVK_LOCK_TTL_SECONDS (${lockTtl}s)`,
    });
  }
  const sources = [
    'SVK_KUBECONFIG',
    'SVK_KUBECONFIG_SECRET',
    'SVK_KUBECONFIG_PARAMETER',
    'SVK_EKS_CLUSTER_NAME',
  ];
  const given = sources.filter((name) => env[name] !== undefined);
  if (given.length > 1) {
    issues.push({
      variable: given.join(', '),
      message: 'name more than one way to reach the cluster: set only one of them',
    });
  }
  for (const name of ['SVK_EKS_ENDPOINT', 'SVK_EKS_CA_DATA']) {
    if (env[name] !== undefined && env.SVK_EKS_CLUSTER_NAME === undefined)
      issues.push({ variable: name, message: 'is only used with SVK_EKS_CLUSTER_NAME, which is not set' });
  }
  const recordTtl = num('SVK_RELEASE_RECORD_TTL_SECONDS', DEFAULTS.releaseRecordTtl);
  const statusCache = num('SVK_RELEASE_STATUS_CACHE_SECONDS', DEFAULTS.releaseStatusCache);
  // The gate's safety argument needs the cache well inside ¾ of the record TTL (lib/release/gate.ts).
  if (Number.isFinite(recordTtl) && Number.isFinite(statusCache) && statusCache * 2 > recordTtl) {
    issues.push({
      variable: 'SVK_RELEASE_STATUS_CACHE_SECONDS',
      message: `(${statusCache}) must be at most half of SVK_RELEASE_RECORD_TTL_SECONDS (${recordTtl})`,
    });
  }
  const own = (env.SVK_RELEASE ?? PACKAGE_RELEASE).trim();
  for (const [variable, fallback] of [
    ['SVK_MIN_COMPATIBLE_RELEASE', DEFAULT_MIN_COMPATIBLE_RELEASE],
    ['SVK_REQUIRED_RECONCILER_RELEASE', DEFAULT_REQUIRED_RECONCILER_RELEASE],
  ] as const) {
    const value = (env[variable] ?? fallback).trim();
    // Above its own release, a release could never act (or never let itself act).
    if (isRelease(own) && isRelease(value) && releaseLessThan(own, value)) {
      issues.push({ variable, message: `(${value}) must not exceed SVK_RELEASE (${own})` });
    }
  }
  return issues;
}

/**
 * Parses and validates the configuration from `env` (defaults + environment).
 * @throws ConfigError naming every bad variable; nothing else is done.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty variables count as unset, as in a serverless.yml that passes `${env:X, ''}`.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const providerName = typeof present.SVK_PROVIDER === 'string' ? present.SVK_PROVIDER : 'mock';
  const schema = envSchema.and(z.object({ SVK_NODE_TAINTS: taints(providerName) }));
  // Taints may be set to the empty string on purpose: no taints at all.
  const parsed = schema.safeParse({ ...present, SVK_NODE_TAINTS: env.SVK_NODE_TAINTS });
  const issues = [
    ...(parsed.success ? [] : parsed.error.issues).map((issue) => ({
      variable: String(issue.path[0] ?? 'environment'),
      message: issue.message,
    })),
    ...crossChecks(present),
  ];
  if (issues.length > 0 || !parsed.success) throw new ConfigError(issues);
  const e = parsed.data;
  return {
    provider: e.SVK_PROVIDER,
    nodeNames: e.SVK_NODE_NAMES,
    node: {
      labels: e.SVK_NODE_LABELS,
      taints: e.SVK_NODE_TAINTS,
      capacity: e.SVK_NODE_CAPACITY,
      operatingSystem: e.SVK_NODE_OS,
      ...(e.SVK_NODE_INTERNAL_IP ? { internalIp: e.SVK_NODE_INTERNAL_IP } : {}),
      kubeletPort: e.SVK_KUBELET_PORT,
      leaseDurationSeconds: e.SVK_NODE_LEASE_DURATION_SECONDS,
      leaseRenewIntervalMs: e.SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS * 1000,
      statusIntervalMs: e.SVK_NODE_STATUS_INTERVAL_SECONDS * 1000,
      pingIntervalMs: e.SVK_PING_INTERVAL_SECONDS * 1000,
    },
    heartbeat: {
      maxParallel: e.SVK_HEARTBEAT_MAX_PARALLEL,
      stopBeforeDeadlineMs: e.SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS,
    },
    lock: { ttlMs: e.SVK_LOCK_TTL_SECONDS * 1000, pollMs: e.SVK_LOCK_POLL_MS },
    pods: {
      claimMs: e.SVK_POD_CLAIM_SECONDS * 1000,
      statusIntervalMs: e.SVK_POD_STATUS_INTERVAL_SECONDS * 1000,
      danglingIntervalMs: e.SVK_POD_DANGLING_INTERVAL_SECONDS * 1000,
      maxParallel: e.SVK_POD_MAX_PARALLEL,
      statusStopBeforeDeadlineMs: e.SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS,
    },
    nodeConfig: {
      ...(e.SVK_NODE_CONFIG_NAME
        ? { source: { namespace: e.SVK_NODE_CONFIG_NAMESPACE, name: e.SVK_NODE_CONFIG_NAME } }
        : {}),
      trialMs: e.SVK_NODE_CONFIG_TRIAL_SECONDS * 1000,
    },
    dynamodb: {
      tableName: e.SVK_TABLE_NAME,
      ...(e.SVK_DYNAMODB_ENDPOINT ? { endpoint: e.SVK_DYNAMODB_ENDPOINT } : {}),
      region: e.AWS_REGION,
    },
    events: {
      busName: e.SVK_EVENT_BUS_NAME,
      ...(e.SVK_DLQ_URL ? { deadLetterQueueUrl: e.SVK_DLQ_URL } : {}),
    },
    podWatch: {
      maxParallel: e.SVK_POD_WATCH_MAX_PARALLEL,
      stopBeforeDeadlineMs: e.SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS,
      watchTimeoutSeconds: e.SVK_POD_WATCH_TIMEOUT_SECONDS,
      flushMs: e.SVK_POD_WATCH_FLUSH_MS,
      bookmarkIntervalMs: e.SVK_POD_WATCH_BOOKMARK_INTERVAL_MS,
    },
    kube: {
      ...(e.SVK_KUBECONFIG ? { kubeconfigPath: e.SVK_KUBECONFIG } : {}),
      ...(e.SVK_KUBECONFIG_SECRET ? { kubeconfigSecret: e.SVK_KUBECONFIG_SECRET } : {}),
      ...(e.SVK_KUBECONFIG_PARAMETER ? { kubeconfigParameter: e.SVK_KUBECONFIG_PARAMETER } : {}),
      ...(e.SVK_EKS_CLUSTER_NAME
        ? {
            eks: {
              clusterName: e.SVK_EKS_CLUSTER_NAME,
              ...(e.SVK_EKS_ENDPOINT ? { endpoint: e.SVK_EKS_ENDPOINT } : {}),
              ...(e.SVK_EKS_CA_DATA ? { caData: e.SVK_EKS_CA_DATA } : {}),
            },
          }
        : {}),
      requestTimeoutMs: e.SVK_KUBE_REQUEST_TIMEOUT_MS,
    },
    metrics: {
      enabled: e.SVK_METRICS === 'emf',
      namespace: e.SVK_METRICS_NAMESPACE,
      deployment: e.SVK_DEPLOYMENT_NAME,
      perNode: e.SVK_METRICS_NODE_DIMENSION,
    },
    logLevel: e.SVK_LOG_LEVEL,
    release: e.SVK_RELEASE,
    gating: {
      minCompatibleRelease: e.SVK_MIN_COMPATIBLE_RELEASE,
      requiredReconcilerRelease: e.SVK_REQUIRED_RECONCILER_RELEASE,
      releaseRecordTtlMs: e.SVK_RELEASE_RECORD_TTL_SECONDS * 1000,
      statusCacheMs: e.SVK_RELEASE_STATUS_CACHE_SECONDS * 1000,
    },
    reconcile: {
      intervalMs: e.SVK_RECONCILE_INTERVAL_SECONDS * 1000,
      leaderWaitMs: e.SVK_RECONCILE_LEADER_WAIT_MS,
      stopBeforeDeadlineMs: e.SVK_RECONCILE_STOP_BEFORE_DEADLINE_MS,
      resyncGraceMs: e.SVK_RECONCILE_RESYNC_GRACE_SECONDS * 1000,
    },
  };
}
