import { releaseLessThan } from '../release/release.ts';
import { type ConfigIssue, whenParsed } from './env-parsing.ts';
import type { EnvValues } from './env-variables.ts';
import { kubeletApiRules } from './kubelet-api-config.ts';
import { leaseRuleError } from './node-settings.ts';

/**
 * Rules between environment variables, run on the values that parsed (with
 * their defaults), each only when every variable it reads parsed: together
 * with each variable's own rule, every bad variable is named at once.
 */

type Values = Partial<EnvValues>;

function leaseRule(values: Values): ConfigIssue[] {
  return whenParsed(
    values,
    ['SVK_NODE_LEASE_DURATION_SECONDS', 'SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS'],
    (v) => {
      const lease = v.SVK_NODE_LEASE_DURATION_SECONDS;
      const renew = v.SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS;
      return leaseRuleError(lease, renew)
        ? [
            {
              variable: 'SVK_NODE_LEASE_DURATION_SECONDS',
              message: `(${lease}) must exceed 3 renew intervals (SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS=${renew})`,
            },
          ]
        : [];
    },
  );
}

function lockRule(values: Values): ConfigIssue[] {
  return whenParsed(values, ['SVK_LOCK_TTL_SECONDS', 'SVK_LOCK_POLL_MS'], (v) =>
    v.SVK_LOCK_POLL_MS >= v.SVK_LOCK_TTL_SECONDS * 1000
      ? [
          {
            variable: 'SVK_LOCK_POLL_MS',
            message: `must be shorter than SVK_LOCK_TTL_SECONDS (${v.SVK_LOCK_TTL_SECONDS}s)`,
          },
        ]
      : [],
  );
}

const CLUSTER_SOURCES = [
  'SVK_KUBECONFIG',
  'SVK_KUBECONFIG_SECRET',
  'SVK_KUBECONFIG_PARAMETER',
  'SVK_EKS_CLUSTER_NAME',
] as const;

function clusterAccessRules(values: Values): ConfigIssue[] {
  // Among the sources that parsed: one that failed its own rule is reported already.
  const given = CLUSTER_SOURCES.filter((variable) => values[variable] !== undefined);
  const issues: ConfigIssue[] =
    given.length > 1
      ? [
          {
            variable: given.join(', '),
            message: 'name more than one way to reach the cluster: set only one of them',
          },
        ]
      : [];
  for (const variable of ['SVK_EKS_ENDPOINT', 'SVK_EKS_CA_DATA'] as const) {
    issues.push(
      ...whenParsed(values, [variable, 'SVK_EKS_CLUSTER_NAME'], (v) =>
        v[variable] !== undefined && v.SVK_EKS_CLUSTER_NAME === undefined
          ? [{ variable, message: 'is only used with SVK_EKS_CLUSTER_NAME, which is not set' }]
          : [],
      ),
    );
  }
  return issues;
}

function gatingRules(values: Values): ConfigIssue[] {
  // The gate's safety argument needs the cache well inside ¾ of the record TTL (lib/release/gate.ts).
  const issues = whenParsed(
    values,
    ['SVK_RELEASE_RECORD_TTL_SECONDS', 'SVK_RELEASE_STATUS_CACHE_SECONDS'],
    (v) => {
      const recordTtl = v.SVK_RELEASE_RECORD_TTL_SECONDS;
      const statusCache = v.SVK_RELEASE_STATUS_CACHE_SECONDS;
      return statusCache * 2 > recordTtl
        ? [
            {
              variable: 'SVK_RELEASE_STATUS_CACHE_SECONDS',
              message: `(${statusCache}) must be at most half of SVK_RELEASE_RECORD_TTL_SECONDS (${recordTtl})`,
            },
          ]
        : [];
    },
  );
  // Above its own release, a release could never act (or never let itself act).
  for (const variable of ['SVK_MIN_COMPATIBLE_RELEASE', 'SVK_REQUIRED_RECONCILER_RELEASE'] as const) {
    issues.push(
      ...whenParsed(values, [variable, 'SVK_RELEASE'], (v) =>
        releaseLessThan(v.SVK_RELEASE, v[variable])
          ? [{ variable, message: `(${v[variable]}) must not exceed SVK_RELEASE (${v.SVK_RELEASE})` }]
          : [],
      ),
    );
  }
  return issues;
}

/** AWS's credentials come as a pair: one without the other is a mistake, not a reason to look elsewhere. */
function awsCredentialsRule(values: Values): ConfigIssue[] {
  return whenParsed(values, ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'], (v) => {
    const key = v.AWS_ACCESS_KEY_ID !== undefined;
    const secret = v.AWS_SECRET_ACCESS_KEY !== undefined;
    if (key === secret) {
      return !key && v.AWS_SESSION_TOKEN !== undefined
        ? [
            {
              variable: 'AWS_SESSION_TOKEN',
              message: 'is set without AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
            },
          ]
        : [];
    }
    return [
      key
        ? { variable: 'AWS_SECRET_ACCESS_KEY', message: 'must be set with AWS_ACCESS_KEY_ID' }
        : { variable: 'AWS_ACCESS_KEY_ID', message: 'must be set with AWS_SECRET_ACCESS_KEY' },
    ];
  });
}

/** Every problem between the variables that parsed. */
export function crossRuleIssues(values: Values): ConfigIssue[] {
  return [
    ...leaseRule(values),
    ...lockRule(values),
    ...clusterAccessRules(values),
    ...gatingRules(values),
    ...awsCredentialsRule(values),
    ...kubeletApiRules(values),
  ];
}
