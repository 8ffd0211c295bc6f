import { z } from 'zod';
import {
  dns1123SubdomainError,
  isQuantity,
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
    leaseMs: number;
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
  kube: { kubeconfigPath?: string; requestTimeoutMs: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The release of this code, used by the reconciler's gating. */
  release: string;
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

function wholeNumber(defaultValue: number, min: number, max: number) {
  return z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
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

const labels = z
  .string()
  .default('')
  .transform((raw, ctx) => {
    const result: Record<string, string> = {};
    for (const [key, value] of pairs(raw)) {
      const keyError = qualifiedNameError(key);
      if (keyError) ctx.addIssue({ code: 'custom', message: `label key "${key}": ${keyError}` });
      const valueError = labelValueError(value);
      if (valueError)
        ctx.addIssue({ code: 'custom', message: `label "${key}" value "${value}": ${valueError}` });
      result[key] = value;
    }
    return result;
  });

const capacity = z
  .string()
  .default('cpu=20,memory=100Gi,pods=110,ephemeral-storage=100Gi')
  .transform((raw, ctx) => {
    const result: Record<string, string> = {};
    for (const [name, quantity] of pairs(raw)) {
      const nameError = qualifiedNameError(name);
      if (nameError) ctx.addIssue({ code: 'custom', message: `resource name "${name}": ${nameError}` });
      if (!isQuantity(quantity)) {
        ctx.addIssue({
          code: 'custom',
          message: `"${name}=${quantity}" is not a resource quantity (e.g. 4, 500m, 16Gi)`,
        });
      }
      result[name] = quantity;
    }
    if (!('pods' in result)) ctx.addIssue({ code: 'custom', message: 'must include pods (e.g. pods=110)' });
    return result;
  });

function taints(providerName: string) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): Taint[] => {
      if (raw === undefined) return [{ key: DEFAULT_TAINT_KEY, value: providerName, effect: 'NoSchedule' }];
      const result: Taint[] = [];
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
        const keyError = qualifiedNameError(key);
        if (keyError) ctx.addIssue({ code: 'custom', message: `taint key "${key}": ${keyError}` });
        const valueError = value === undefined ? undefined : labelValueError(value);
        if (valueError)
          ctx.addIssue({ code: 'custom', message: `taint "${key}" value "${value}": ${valueError}` });
        if (!(TAINT_EFFECTS as readonly string[]).includes(effect)) {
          ctx.addIssue({
            code: 'custom',
            message: `taint "${key}" effect "${effect}" must be one of ${TAINT_EFFECTS.join(', ')}`,
          });
          continue;
        }
        result.push({ key, ...(value === undefined ? {} : { value }), effect: effect as TaintEffect });
      }
      return result;
    });
}

const ipv4 = z.ipv4({ message: 'must be an IPv4 address' }).optional();

const envSchema = z.object({
  SVK_PROVIDER: z.enum(['mock'], { message: 'must be one of: mock' }).default('mock'),
  SVK_NODE_NAMES: nodeNames,
  SVK_NODE_LABELS: labels,
  SVK_NODE_CAPACITY: capacity,
  SVK_NODE_OS: z.enum(['linux', 'windows'], { message: 'must be linux or windows' }).default('linux'),
  SVK_NODE_INTERNAL_IP: ipv4,
  SVK_KUBELET_PORT: wholeNumber(10250, 1, 65535),
  SVK_NODE_LEASE_DURATION_SECONDS: wholeNumber(40, 10, 3600),
  SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS: wholeNumber(10, 1, 1200),
  SVK_NODE_STATUS_INTERVAL_SECONDS: wholeNumber(60, 1, 3600),
  SVK_PING_INTERVAL_SECONDS: wholeNumber(10, 1, 600),
  SVK_HEARTBEAT_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
  SVK_LOCK_LEASE_SECONDS: wholeNumber(15, 2, 600),
  SVK_LOCK_POLL_MS: wholeNumber(1000, 50, 60000),
  SVK_POD_CLAIM_SECONDS: wholeNumber(30, 5, 900),
  SVK_POD_STATUS_INTERVAL_SECONDS: wholeNumber(5, 1, 60),
  SVK_POD_DANGLING_INTERVAL_SECONDS: wholeNumber(300, 10, 86400),
  SVK_POD_MAX_PARALLEL: wholeNumber(16, 1, 256),
  SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS: wholeNumber(5000, 1000, 60000),
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
  SVK_KUBE_REQUEST_TIMEOUT_MS: wholeNumber(5000, 100, 120000),
  SVK_LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
  SVK_RELEASE: z
    .string()
    .trim()
    .regex(/^\d+\.\d+\.\d+$/, 'must be a version like 1.2.3')
    .default('0.1.0'),
});

const DEFAULTS = { lease: 40, renew: 10, lockLease: 15, lockPoll: 1000 };

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
  if (lease <= 3 * renew) {
    issues.push({
      variable: 'SVK_NODE_LEASE_DURATION_SECONDS',
      message: `(${lease}) must exceed 3 renew intervals (SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS=${renew})`,
    });
  }
  const lockLease = num('SVK_LOCK_LEASE_SECONDS', DEFAULTS.lockLease);
  const lockPoll = num('SVK_LOCK_POLL_MS', DEFAULTS.lockPoll);
  if (lockPoll >= lockLease * 1000) {
    issues.push({
      variable: 'SVK_LOCK_POLL_MS',
      message: `must be shorter than SVK_LOCK_LEASE_SECONDS (${lockLease}s)`,
    });
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
    lock: { leaseMs: e.SVK_LOCK_LEASE_SECONDS * 1000, pollMs: e.SVK_LOCK_POLL_MS },
    pods: {
      claimMs: e.SVK_POD_CLAIM_SECONDS * 1000,
      statusIntervalMs: e.SVK_POD_STATUS_INTERVAL_SECONDS * 1000,
      danglingIntervalMs: e.SVK_POD_DANGLING_INTERVAL_SECONDS * 1000,
      maxParallel: e.SVK_POD_MAX_PARALLEL,
      statusStopBeforeDeadlineMs: e.SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS,
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
      requestTimeoutMs: e.SVK_KUBE_REQUEST_TIMEOUT_MS,
    },
    logLevel: e.SVK_LOG_LEVEL,
    release: e.SVK_RELEASE,
  };
}
