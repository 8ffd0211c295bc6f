import type { V1Node, V1NodeCondition, V1Taint } from '@kubernetes/client-node';
import type { NodeSettings, Taint } from '../config/node-settings.ts';
import { nodeAddresses, nodePort } from '../kubelet-api/node-endpoint.ts';
import type { ProviderNodeCondition, ProviderNodeStatus } from '../provider/provider.ts';

/** The field manager that owns everything we write on Node objects. */
export const FIELD_MANAGER = 'serverless-virtual-kubelet';

/**
 * Records which labels and taints we set on the Node, so that a label or taint
 * dropped from the config is removed while those of other actors stay.
 */
export const APPLIED_ANNOTATION = 'serverless-virtual-kubelet.io/applied-node-config';

interface Applied {
  labels: string[];
  taints: Array<{ key: string; effect: string }>;
}

/**
 * Labels every virtual node carries, before the configured ones.
 * `architecture` is the provider's `nodeInfo.architecture`, as a real kubelet
 * labels its node `kubernetes.io/arch` with the architecture it reports;
 * without a provider report yet, the label waits for one.
 */
export function nodeLabels(
  name: string,
  settings: NodeSettings,
  architecture?: string,
): Record<string, string> {
  return {
    type: 'virtual-kubelet',
    'kubernetes.io/role': 'agent',
    'kubernetes.io/os': settings.operatingSystem,
    ...(architecture ? { 'kubernetes.io/arch': architecture } : {}),
    'kubernetes.io/hostname': name,
    ...settings.labels,
  };
}

/**
 * The Node we register: metadata and spec only. Status is written separately
 * by server-side apply, so that our field manager owns exactly the conditions
 * we report and dropping one removes it.
 */
export function registrationNode(name: string, settings: NodeSettings, architecture?: string): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: nodeLabels(name, settings, architecture),
      annotations: { [APPLIED_ANNOTATION]: appliedRecord(name, settings, architecture) },
    },
    spec: { taints: settings.taints.map(toV1Taint) },
  };
}

function toV1Taint(t: Taint): V1Taint {
  return { key: t.key, effect: t.effect, ...(t.value === undefined ? {} : { value: t.value }) };
}

function appliedRecord(name: string, settings: NodeSettings, architecture?: string): string {
  const applied: Applied = {
    labels: Object.keys(nodeLabels(name, settings, architecture)).sort(),
    taints: settings.taints.map((t) => ({ key: t.key, effect: t.effect })),
  };
  return JSON.stringify(applied);
}

function readApplied(node: V1Node): Applied {
  try {
    const parsed: unknown = JSON.parse(node.metadata?.annotations?.[APPLIED_ANNOTATION] ?? '');
    const p = parsed as Partial<Applied>;
    return {
      labels: Array.isArray(p.labels) ? p.labels.filter((l): l is string => typeof l === 'string') : [],
      taints: Array.isArray(p.taints)
        ? p.taints.filter((t) => typeof t?.key === 'string' && typeof t?.effect === 'string')
        : [],
    };
  } catch {
    // A Node without this annotation (or with one that does not parse): nothing of ours to remove.
    return { labels: [], taints: [] };
  }
}

/**
 * The JSON merge patch that brings the Node's labels and taints to `settings`,
 * or undefined when they already match. Labels and taints of other actors
 * (the node lifecycle controller's `node.kubernetes.io/*` taints, say) stay;
 * ours that the settings dropped go. Taints are one atomic list in the API,
 * so the patch carries the Node's resourceVersion: a concurrent change makes
 * it fail with a conflict instead of losing the other writer's taint.
 */
export function metadataPatch(
  name: string,
  settings: NodeSettings,
  current: V1Node,
  architecture?: string,
): object | undefined {
  const applied = readApplied(current);
  const labels = nodeLabels(name, settings, architecture);
  const have = current.metadata?.labels ?? {};
  const labelPatch: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(labels)) if (have[key] !== value) labelPatch[key] = value;
  for (const key of applied.labels) if (!(key in labels) && key in have) labelPatch[key] = null;

  const ours = (t: { key: string; effect: string }) =>
    [...applied.taints, ...settings.taints].some((o) => o.key === t.key && o.effect === t.effect);
  const currentTaints = current.spec?.taints ?? [];
  const taints = [...currentTaints.filter((t) => !ours(t)), ...settings.taints.map(toV1Taint)];
  const sameTaints =
    taints.length === currentTaints.length &&
    taints.every((t) =>
      currentTaints.some(
        (c) => c.key === t.key && c.effect === t.effect && (c.value ?? '') === (t.value ?? ''),
      ),
    );
  const record = appliedRecord(name, settings, architecture);
  const sameRecord = current.metadata?.annotations?.[APPLIED_ANNOTATION] === record;
  if (Object.keys(labelPatch).length === 0 && sameTaints && sameRecord) return undefined;
  return {
    metadata: {
      resourceVersion: current.metadata?.resourceVersion,
      ...(Object.keys(labelPatch).length > 0 ? { labels: labelPatch } : {}),
      ...(sameRecord ? {} : { annotations: { [APPLIED_ANNOTATION]: record } }),
    },
    ...(sameTaints ? {} : { spec: { taints } }),
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
  /** Conditions the node controller itself reports (ConfigOK), after the provider's. */
  extraConditions?: readonly ProviderNodeCondition[];
  current?: V1Node;
  now: Date;
}): V1Node {
  const { name, settings, report, pingError, current, now } = args;
  const previous = new Map((current?.status?.conditions ?? []).map((c) => [c.type, c]));
  const reported = report.conditions.map((c) =>
    pingError && c.type === 'Ready' ? pingFailedCondition(pingError) : c,
  );
  if (pingError && !reported.some((c) => c.type === 'Ready')) reported.push(pingFailedCondition(pingError));
  reported.push(...(args.extraConditions ?? []));
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
      addresses: nodeAddresses(name, settings.kubeletApiEndpoint, settings.internalIp),
      daemonEndpoints: {
        kubeletEndpoint: { Port: nodePort(name, settings.kubeletApiEndpoint, settings.kubeletPort) },
      },
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
export function reportFingerprint(
  report: ProviderNodeStatus,
  pingError: string | undefined,
  extraConditions: readonly ProviderNodeCondition[] = [],
): string {
  return JSON.stringify([
    report.capacity,
    report.allocatable ?? null,
    report.conditions,
    pingError ?? null,
    extraConditions,
  ]);
}
