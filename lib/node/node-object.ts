import type { V1Node, V1NodeCondition } from '@kubernetes/client-node';
import type { NodeSettings } from '../config/config.ts';
import type { ProviderNodeCondition, ProviderNodeStatus } from '../provider/provider.ts';

/** The field manager that owns everything we write on Node objects. */
export const FIELD_MANAGER = 'serverless-virtual-kubelet';

/** Labels every virtual node carries, before the configured ones. */
export function nodeLabels(name: string, settings: NodeSettings): Record<string, string> {
  return {
    type: 'virtual-kubelet',
    'kubernetes.io/role': 'agent',
    'kubernetes.io/os': settings.operatingSystem,
    'kubernetes.io/hostname': name,
    ...settings.labels,
  };
}

/**
 * The Node we register: metadata and spec only. Status is written separately
 * by server-side apply, so that our field manager owns exactly the conditions
 * we report and dropping one removes it.
 */
export function registrationNode(name: string, settings: NodeSettings): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: nodeLabels(name, settings) },
    spec: {
      taints: settings.taints.map((t) => ({
        key: t.key,
        effect: t.effect,
        ...(t.value === undefined ? {} : { value: t.value }),
      })),
    },
  };
}

/** Ready=False replacing the provider's Ready while its ping fails. */
export function pingFailedCondition(error: string): ProviderNodeCondition {
  return {
    type: 'Ready',
    status: 'False',
    reason: 'ProviderPingFailed',
    message: `provider ping failed: ${error}`,
  };
}

/**
 * The status we apply: the provider's report, with Ready overridden while the
 * ping fails, a fresh lastHeartbeatTime, and lastTransitionTime kept from the
 * current Node unless the condition's status changed.
 */
export function statusApplyBody(args: {
  name: string;
  settings: NodeSettings;
  report: ProviderNodeStatus;
  pingError?: string;
  current?: V1Node;
  now: Date;
}): V1Node {
  const { name, settings, report, pingError, current, now } = args;
  const previous = new Map((current?.status?.conditions ?? []).map((c) => [c.type, c]));
  const reported = report.conditions.map((c) =>
    pingError && c.type === 'Ready' ? pingFailedCondition(pingError) : c,
  );
  if (pingError && !reported.some((c) => c.type === 'Ready')) reported.push(pingFailedCondition(pingError));
  const conditions: V1NodeCondition[] = reported.map((c) => {
    const before = previous.get(c.type);
    return {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastHeartbeatTime: now,
      lastTransitionTime:
        before && before.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : now,
    };
  });
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: {
      capacity: { ...report.capacity },
      allocatable: { ...(report.allocatable ?? report.capacity) },
      conditions,
      addresses: [
        ...(settings.internalIp ? [{ type: 'InternalIP', address: settings.internalIp }] : []),
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: settings.kubeletPort } },
      nodeInfo: {
        ...report.nodeInfo,
        machineID: '',
        systemUUID: '',
        bootID: '',
        kernelVersion: '',
        containerRuntimeVersion: `${FIELD_MANAGER}://${report.nodeInfo.kubeletVersion}`,
        kubeProxyVersion: '',
      },
    },
  };
}

/**
 * A fingerprint of what the provider reported and the ping result, without
 * timestamps: a change means the status must be written now rather than at
 * the next status interval.
 */
export function reportFingerprint(report: ProviderNodeStatus, pingError: string | undefined): string {
  return JSON.stringify([report.capacity, report.allocatable ?? null, report.conditions, pingError ?? null]);
}
