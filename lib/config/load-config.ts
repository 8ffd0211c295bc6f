import { type ProviderConfig, parseProviderSettings } from '../provider/registry.ts';
import { parseHostPort } from '../util/host-port.ts';
import { type Config, ConfigError } from './config.ts';
import { crossRuleIssues } from './cross-rules.ts';
import { type Env, givenVariables, parsedAll, parseVariables } from './env-parsing.ts';
import { ENV_VARIABLES, type EnvValues } from './env-variables.ts';
import { kubeletApiPort, kubeletApiSettings } from './kubelet-api-config.ts';
import { defaultTaint, type NodeSettings } from './node-settings.ts';

/**
 * Parses and validates the configuration from `env`: every variable on its
 * own (with its default), then the rules between them, then the chosen
 * provider's own variables.
 * @throws ConfigError naming every bad variable; nothing else is done.
 */
export function loadConfig(env: Env): Config {
  const given = givenVariables(env);
  // Taints may be set to the empty string on purpose: no taints at all.
  const { values, issues } = parseVariables(ENV_VARIABLES, {
    ...given,
    SVK_NODE_TAINTS: env.SVK_NODE_TAINTS,
  });
  issues.push(...crossRuleIssues(values));
  let provider: ProviderConfig | undefined;
  if (values.SVK_PROVIDER !== undefined) {
    const parsed = parseProviderSettings(values.SVK_PROVIDER, given);
    if (parsed.ok) provider = parsed.settings;
    else issues.push(...parsed.issues);
  }
  if (issues.length > 0 || !provider || !parsedAll(ENV_VARIABLES, values)) throw new ConfigError(issues);
  return toConfig(values, provider);
}

function nodeSettings(e: EnvValues, provider: ProviderConfig): NodeSettings {
  const { endpoint } = kubeletApiSettings(e);
  return {
    labels: e.SVK_NODE_LABELS,
    taints: e.SVK_NODE_TAINTS ?? [defaultTaint(provider.name)],
    capacity: e.SVK_NODE_CAPACITY,
    operatingSystem: e.SVK_NODE_OS,
    ...(e.SVK_NODE_INTERNAL_IP ? { internalIp: e.SVK_NODE_INTERNAL_IP } : {}),
    kubeletPort: kubeletApiPort(kubeletApiSettings(e), e.SVK_KUBELET_PORT),
    ...(endpoint ? { kubeletApiEndpoint: endpoint } : {}),
    leaseDurationSeconds: e.SVK_NODE_LEASE_DURATION_SECONDS,
    leaseRenewIntervalMs: e.SVK_NODE_LEASE_RENEW_INTERVAL_SECONDS * 1000,
    statusIntervalMs: e.SVK_NODE_STATUS_INTERVAL_SECONDS * 1000,
    pingIntervalMs: e.SVK_PING_INTERVAL_SECONDS * 1000,
  };
}

function clusterAccess(e: EnvValues): Config['kube'] {
  return {
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
  };
}

/** The functions' loops: heartbeat, pod-status, pod-watch and the reconciler. */
function loops(e: EnvValues): Pick<Config, 'heartbeat' | 'pods' | 'podWatch' | 'reconcile'> {
  return {
    heartbeat: {
      maxParallel: e.SVK_HEARTBEAT_MAX_PARALLEL,
      stopBeforeDeadlineMs: e.SVK_HEARTBEAT_STOP_BEFORE_DEADLINE_MS,
    },
    pods: {
      claimMs: e.SVK_POD_CLAIM_SECONDS * 1000,
      forceDeleteHandOffMs: e.SVK_POD_FORCE_DELETE_HANDOFF_SECONDS * 1000,
      statusIntervalMs: e.SVK_POD_STATUS_INTERVAL_SECONDS * 1000,
      danglingIntervalMs: e.SVK_POD_DANGLING_INTERVAL_SECONDS * 1000,
      maxParallel: e.SVK_POD_MAX_PARALLEL,
      statusStopBeforeDeadlineMs: e.SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS,
      ...podApiServer(e.SVK_POD_API_SERVER),
    },
    podWatch: {
      maxParallel: e.SVK_POD_WATCH_MAX_PARALLEL,
      stopBeforeDeadlineMs: e.SVK_POD_WATCH_STOP_BEFORE_DEADLINE_MS,
      watchTimeoutSeconds: e.SVK_POD_WATCH_TIMEOUT_SECONDS,
      flushMs: e.SVK_POD_WATCH_FLUSH_MS,
      bookmarkIntervalMs: e.SVK_POD_WATCH_BOOKMARK_INTERVAL_MS,
    },
    reconcile: {
      intervalMs: e.SVK_RECONCILE_INTERVAL_SECONDS * 1000,
      leaderWaitMs: e.SVK_RECONCILE_LEADER_WAIT_MS,
      stopBeforeDeadlineMs: e.SVK_RECONCILE_STOP_BEFORE_DEADLINE_MS,
      resyncGraceMs: e.SVK_RECONCILE_RESYNC_GRACE_SECONDS * 1000,
    },
  };
}

/** Where state, events and metrics go. */
function services(e: EnvValues): Pick<Config, 'dynamodb' | 'events' | 'metrics' | 'nodeConfig' | 'tick'> {
  return {
    tick: {
      ...(e.SVK_TICK_QUEUE_URL ? { queueUrl: e.SVK_TICK_QUEUE_URL } : {}),
      parts: e.SVK_TICK_PARTS,
      workMs: e.SVK_TICK_WORK_MS,
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
    metrics: {
      enabled: e.SVK_METRICS === 'emf',
      namespace: e.SVK_METRICS_NAMESPACE,
      deployment: e.SVK_DEPLOYMENT_NAME,
      service: e.SVK_SERVICE_NAME,
      perNode: e.SVK_METRICS_NODE_DIMENSION,
    },
    nodeConfig: {
      ...(e.SVK_NODE_CONFIG_NAME
        ? { source: { namespace: e.SVK_NODE_CONFIG_NAMESPACE, name: e.SVK_NODE_CONFIG_NAME } }
        : {}),
      trialMs: e.SVK_NODE_CONFIG_TRIAL_SECONDS * 1000,
    },
  };
}

function toConfig(e: EnvValues, provider: ProviderConfig): Config {
  return {
    provider,
    nodeNames: e.SVK_NODE_NAMES,
    node: nodeSettings(e, provider),
    lock: { ttlMs: e.SVK_LOCK_TTL_SECONDS * 1000, pollMs: e.SVK_LOCK_POLL_MS },
    kube: clusterAccess(e),
    kubeletApi: kubeletApiSettings(e),
    logLevel: e.SVK_LOG_LEVEL,
    release: e.SVK_RELEASE,
    gating: {
      minCompatibleRelease: e.SVK_MIN_COMPATIBLE_RELEASE,
      requiredReconcilerRelease: e.SVK_REQUIRED_RECONCILER_RELEASE,
      releaseRecordTtlMs: e.SVK_RELEASE_RECORD_TTL_SECONDS * 1000,
      statusCacheMs: e.SVK_RELEASE_STATUS_CACHE_SECONDS * 1000,
    },
    ...loops(e),
    ...services(e),
  };
}

/** SVK_POD_API_SERVER, checked by its rule already. */
function podApiServer(value: string | undefined): Pick<Config['pods'], 'apiServer'> {
  const parsed = value === undefined ? undefined : parseHostPort(value);
  return parsed && !('problem' in parsed) ? { apiServer: parsed } : {};
}
