import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import type { QueueDepth } from '../dead-letters/queue.ts';
import { isNotFound, type KubeClients } from '../kube/client.ts';
import { listNodePods } from '../kube/node-pods.ts';
import { podKey } from '../kube/pod-key.ts';
import type { LockStore } from '../lock/lock.ts';
import { deploymentLockNames } from '../lock/lock-names.ts';
import { NODE_LEASE_NAMESPACE } from '../node/node-lease.ts';
import { STATE_STORE_CONDITION } from '../node/state-store-condition.ts';
import { isClaimLive, KnownPodStore } from '../pod/known/known-pods.ts';
import type { PodProvider } from '../provider/provider.ts';
import { STATUS_KEY } from '../release/reconciler-status.ts';
import type { StateTable } from '../state/dynamodb.ts';
import { errorMessage } from '../util/error-message.ts';

/**
 * The reconciler's status record, read by key and shown field by field, so
 * the status command needs no change when the record grows.
 */
export const RECONCILER_STATUS_KEY = STATUS_KEY;

/** One configured virtual node as the API server sees it. */
export interface NodeReport {
  name: string;
  registered: boolean;
  /** Ready condition status (True/False/Unknown), absent when the node has none. */
  ready?: string;
  readyReason?: string;
  /** Seconds since the lease's renewTime; absent without a lease. */
  leaseAgeSeconds?: number;
  /** The ConfigOK condition, when the node carries one. */
  configOk?: { status: string; reason?: string; message?: string };
  /** The StateStoreUnavailable condition's status: True while the heartbeat renews the lease without its lock. */
  stateStoreUnavailable?: string;
}

/** One lock record. */
export interface LockReport {
  name: string;
  /** Absent when released or never taken. */
  owner?: string;
  epoch?: number;
  /** Seconds since the holder last wrote the record (wall clock, for operators only). */
  ageSeconds?: number;
  ttlSeconds?: number;
  /** `held` (renewed within its lease), `stale` (owner set, not renewed within its lease: takeover due), `released`, `none`. */
  state: 'held' | 'stale' | 'released' | 'none';
}

/** One pod known to us (a known-pod record) or to the provider. */
export interface PodReport {
  node: string;
  pod: string;
  uid: string;
  /** A known-pod record exists (pod-sync took the pod on). */
  known: boolean;
  /** Spec applied in the provider (appliedHash set). */
  applied: boolean;
  /** A pod-sync invocation is calling the provider (request id). */
  claimedBy?: string;
  forceDeleteAt?: string;
  /** Phase in the API server, `gone` when the API server no longer has this uid. */
  apiPhase: string;
  /** Phase in the provider, `missing` when the provider does not run this uid. */
  providerPhase: string;
}

export interface DeadLetterReport {
  url?: string;
  /** Messages waiting; null when not reachable (no queue configured, or an error). */
  depth: number | null;
  inFlight?: number;
  /** Age of the oldest message (CloudWatch), when known. */
  oldestAgeSeconds?: number;
  /** Why depth is null. */
  note?: string;
}

/** What `npm run status` shows. A section that could not be read carries `error` and the rest still shows. */
export interface StatusReport {
  generatedAt: string;
  table: string;
  provider: string;
  nodes: NodeReport[];
  locks: LockReport[];
  /** Every scalar field of the reconciler's status record; null when there is none. */
  reconciler: Record<string, string | number | boolean> | null;
  pods: PodReport[];
  deadLetterQueue: DeadLetterReport;
  errors: Array<{ section: string; error: string }>;
}

export interface StatusSources {
  config: Config;
  kube: KubeClients;
  table: StateTable;
  lockStore: LockStore;
  podProvider: PodProvider;
  clock: Clock;
  /** Reads the dead-letter queue's depth; injected so that only one module imports the SQS SDK. */
  queueDepth?: (url: string) => Promise<QueueDepth>;
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** Reads every section; never throws for an unreachable component, it records the error instead. */
export async function collectStatus(sources: StatusSources): Promise<StatusReport> {
  const { config, clock } = sources;
  const errors: StatusReport['errors'] = [];
  const section = async <T>(name: string, fallback: T, read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      errors.push({ section: name, error: errorMessage(err) });
      return fallback;
    }
  };
  const [nodes, locks, reconciler, pods, deadLetterQueue] = await Promise.all([
    section('nodes', [], () => readNodes(sources)),
    section('locks', [], () => readLocks(sources)),
    section('reconciler', null, () => readReconciler(sources)),
    section('pods', [], () =>
      readPods(sources, (name, err) => errors.push({ section: name, error: errorMessage(err) })),
    ),
    readDeadLetter(sources),
  ]);
  return {
    generatedAt: new Date(clock.now()).toISOString(),
    table: config.dynamodb.tableName,
    provider: config.provider.name,
    nodes,
    locks,
    reconciler,
    pods,
    deadLetterQueue,
    errors,
  };
}

async function readNodes({ config, kube, clock }: StatusSources): Promise<NodeReport[]> {
  return Promise.all(
    config.nodeNames.map(async (name): Promise<NodeReport> => {
      const [node, lease] = await Promise.all([
        kube.core.readNode({ name }).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        }),
        kube.coordination
          .readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE })
          .catch((err: unknown) => {
            if (isNotFound(err)) return undefined;
            throw err;
          }),
      ]);
      const conditions = node?.status?.conditions ?? [];
      const ready = conditions.find((c) => c.type === 'Ready');
      const configOk = conditions.find((c) => c.type === 'ConfigOK');
      const degraded = conditions.find((c) => c.type === STATE_STORE_CONDITION)?.status;
      const renew = lease?.spec?.renewTime;
      return {
        name,
        registered: node !== undefined,
        ...(ready ? { ready: ready.status, ...(ready.reason ? { readyReason: ready.reason } : {}) } : {}),
        ...(renew ? { leaseAgeSeconds: seconds(clock.now() - new Date(renew).getTime()) } : {}),
        ...(configOk
          ? {
              configOk: {
                status: configOk.status,
                ...(configOk.reason ? { reason: configOk.reason } : {}),
                ...(configOk.message ? { message: configOk.message } : {}),
              },
            }
          : {}),
        ...(degraded ? { stateStoreUnavailable: degraded } : {}),
      };
    }),
  );
}

async function readLocks({ config, lockStore: store, clock }: StatusSources): Promise<LockReport[]> {
  return Promise.all(
    deploymentLockNames(config.nodeNames).map(async (name): Promise<LockReport> => {
      const record = await store.get(name);
      if (!record) return { name, state: 'none' };
      const ageMs = record.updatedAt ? clock.now() - Date.parse(record.updatedAt) : undefined;
      const state = !record.owner
        ? 'released'
        : ageMs !== undefined && ageMs <= record.ttlMs
          ? 'held'
          : 'stale';
      return {
        name,
        ...(record.owner ? { owner: record.owner } : {}),
        epoch: record.epoch,
        ...(ageMs !== undefined ? { ageSeconds: seconds(ageMs) } : {}),
        ttlSeconds: seconds(record.ttlMs),
        state,
      };
    }),
  );
}

async function readReconciler({ table }: StatusSources): Promise<StatusReport['reconciler']> {
  const item = await table.get(RECONCILER_STATUS_KEY);
  if (!item) return null;
  const fields: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(item)) {
    if (key === 'pk' || key === 'sk') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      fields[key] = value;
  }
  return fields;
}

async function readPods(
  { config, kube, table, podProvider: provider, clock }: StatusSources,
  onError: (section: string, err: unknown) => void,
): Promise<PodReport[]> {
  const knownPods = new KnownPodStore(table);
  const rows: PodReport[] = [];
  for (const node of config.nodeNames) {
    const [known, api, listed] = await Promise.all([
      knownPods.list(node),
      listNodePods(kube.core, node)
        .then((l) => l.pods)
        .catch((err: unknown) => {
          onError(`pods of ${node} in the API server`, err);
          return undefined;
        }),
      provider.listPods(node).catch((err: unknown) => {
        onError(`pods of ${node} in the provider`, err);
        return [] as V1Pod[];
      }),
    ]);
    const apiByKey = new Map((api ?? []).map((p) => [podKey(p.metadata), p]));
    const providerByKey = new Map(listed.map((p) => [podKey(p.metadata), p]));
    const apiPhase = (key: string, uid: string) => {
      if (!api) return 'unknown';
      const p = apiByKey.get(key);
      if (p?.metadata?.uid !== uid) return 'gone';
      return p.metadata?.deletionTimestamp
        ? `${p.status?.phase ?? 'Pending'} (terminating)`
        : (p.status?.phase ?? 'Pending');
    };
    const providerPhase = (p: V1Pod | undefined, uid: string) =>
      p && p.metadata?.uid === uid ? (p.status?.phase ?? 'Unknown') : 'missing';
    for (const record of known) {
      const key = podKey(record);
      // The provider's list comes from an index that may lag; a single read is exact.
      const inProvider =
        providerByKey.get(key) ??
        (await provider.getPod(record.namespace, record.name).catch(() => undefined));
      rows.push({
        node,
        pod: key,
        uid: record.uid,
        known: true,
        applied: record.appliedHash !== undefined,
        ...(isClaimLive(record.claim, clock.now()) ? { claimedBy: record.claim.owner } : {}),
        ...(record.forceDeleteAt ? { forceDeleteAt: record.forceDeleteAt } : {}),
        apiPhase: apiPhase(key, record.uid),
        providerPhase: providerPhase(inProvider, record.uid),
      });
    }
    const knownKeys = new Set(known.map(podKey));
    for (const p of listed) {
      const key = podKey(p.metadata);
      if (knownKeys.has(key)) continue;
      const uid = p.metadata?.uid ?? '';
      rows.push({
        node,
        pod: key,
        uid,
        known: false,
        applied: false,
        apiPhase: apiPhase(key, uid),
        providerPhase: providerPhase(p, uid),
      });
    }
  }
  return rows.sort((a, b) => a.node.localeCompare(b.node) || a.pod.localeCompare(b.pod));
}

async function readDeadLetter({ config, queueDepth }: StatusSources): Promise<DeadLetterReport> {
  const url = config.events.deadLetterQueueUrl;
  if (!url) return { depth: null, note: 'n/a (SVK_DLQ_URL not set: local run)' };
  if (!queueDepth) return { url, depth: null, note: 'n/a (no SQS access)' };
  try {
    const depth = await queueDepth(url);
    return {
      url,
      depth: depth.visible,
      inFlight: depth.inFlight,
      ...(depth.oldestAgeSeconds !== undefined ? { oldestAgeSeconds: depth.oldestAgeSeconds } : {}),
    };
  } catch (err) {
    return { url, depth: null, note: `unreachable: ${errorMessage(err)}` };
  }
}
