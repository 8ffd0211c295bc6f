import type { V1Pod } from '@kubernetes/client-node';
import { buildNodeController, createPodReconciler, type Dependencies } from '../app/dependencies.ts';
import { isConflict, isNotFound } from '../kube/client.ts';
import { listNodePods } from '../kube/node-pods.ts';
import { PatchStrategy, setHeaderOptions } from '../kube/patch.ts';
import { podKey } from '../kube/pod-key.ts';
import type { Logger } from '../log/logger.ts';
import { NODE_LEASE_NAMESPACE } from '../node/node-lease.ts';
import { type KnownPod, KnownPodStore } from '../pod/known/known-pods.ts';
import { DanglingPodCleaner, type DanglingResult, type NodePodsRead } from '../pod/status/dangling.ts';
import { PodStatusSyncer } from '../pod/status/pod-status-syncer.ts';
import type { PodReconciler } from '../pod/sync/pod-reconciler.ts';
import { decideSync } from '../pod/sync/pod-sync-decision.ts';
import { errorMessage } from '../util/error-message.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import { OwnedNodeStore } from './owned-nodes.ts';

/**
 * The reconcileAll of a leader-elected reconciler (as Monogon's Kubernetes
 * reconciler service runs one), for a virtual kubelet: brings the cluster and
 * the provider back to what the configuration and the API server say,
 * whatever events were lost. Every step is idempotent and touches only our nodes (the
 * configured ones, and the ones this deployment recorded as registered).
 */

/** What one reconcileAll did, for logs, metrics and tests. */
export interface ReconcileAllResult {
  /** kube-node-lease had to be created. */
  namespaceCreated: boolean;
  /** Configured nodes whose Node was missing and was registered. */
  registered: string[];
  /** Removed nodes whose Node and Lease were deleted. */
  removed: string[];
  /** Removed nodes still waiting for their pods to go, with how many remain. */
  draining: Record<string, number>;
  /** Pods re-synced through pod-sync's reconcile (missing or stale known-pod record). */
  resynced: number;
  /** Dangling provider pods deleted and garbage records forgotten, per node. */
  dangling: DanglingResult[];
  forceDeleted: number;
  /** Steps that failed (logged); the next reconcile tries them again. */
  failures: string[];
}

/** Some steps failed; `result` says what was done anyway. */
export class ReconcileIncompleteError extends Error {
  override readonly name = 'ReconcileIncompleteError';
  constructor(readonly result: ReconcileAllResult) {
    super(`reconcile incomplete: ${result.failures.join('; ')}`);
  }
}

export interface ClusterReconcilerOptions {
  deps: Dependencies;
  log: Logger;
  /** Who acts (the request id), for pod claims and logs. */
  owner: string;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** How long a re-sync waits for another invocation's claim on a pod before leaving it to that invocation. */
const CLAIM_WAIT_MS = 5_000;

export class ClusterReconciler {
  private readonly knownPods: KnownPodStore;
  private readonly owned: OwnedNodeStore;
  private readonly cleaner: DanglingPodCleaner;
  private readonly syncer: PodStatusSyncer;

  constructor(private readonly options: ClusterReconcilerOptions) {
    const { deps, log } = options;
    this.knownPods = new KnownPodStore(deps.table);
    this.owned = new OwnedNodeStore(deps.table);
    const common = {
      core: deps.kube.core,
      provider: deps.podProvider,
      knownPods: this.knownPods,
      clock: deps.clock,
      log,
      maxParallel: deps.config.pods.maxParallel,
      handOffMs: deps.config.pods.forceDeleteHandOffMs,
    };
    this.cleaner = new DanglingPodCleaner(common);
    this.syncer = new PodStatusSyncer(common);
  }

  /**
   * One full pass. The API server must answer the first request (the lease
   * namespace), else this throws at once; after that, failing steps are
   * collected and the rest still runs.
   * @throws ReconcileIncompleteError when any step failed.
   */
  async reconcileAll(signal?: AbortSignal): Promise<ReconcileAllResult> {
    const { deps, log } = this.options;
    const configured = deps.config.nodeNames;
    const result: ReconcileAllResult = {
      namespaceCreated: await this.ensureLeaseNamespace(),
      registered: [],
      removed: [],
      draining: {},
      resynced: 0,
      dangling: [],
      forceDeleted: 0,
      failures: [],
    };
    const failed = (what: string, err: unknown, fields: Record<string, unknown> = {}) => {
      result.failures.push(`${what}: ${errorMessage(err)}`);
      if (!signal?.aborted) log.warn({ ...fields, err }, `reconcile: ${what} failed`);
    };

    const recorded = await this.owned.list();
    await this.owned.record(configured, deps.clock.now(), recorded);
    const removed = recorded.filter((n) => !configured.includes(n));
    const limit = deps.config.pods.maxParallel;

    await mapSettledLimit(configured, limit, async (node) => {
      signal?.throwIfAborted();
      try {
        if (await this.ensureNode(node, signal)) result.registered.push(node);
      } catch (err) {
        failed(`node ${node} registration`, err, { node });
      }
      let read: NodePodsRead | undefined;
      try {
        const cleaned = await this.cleaner.cleanNodeRead(node, signal);
        result.dangling.push(cleaned.result);
        read = cleaned.read;
      } catch (err) {
        failed(`dangling pods of ${node}`, err, { node });
      }
      try {
        result.resynced += await this.resyncNode(node, read, signal, (what, err, fields) =>
          failed(what, err, { node, ...fields }),
        );
      } catch (err) {
        failed(`pods of ${node}`, err, { node });
      }
    });

    const draining: string[] = [];
    await mapSettledLimit(removed, limit, async (node) => {
      signal?.throwIfAborted();
      try {
        const left = await this.removeNode(node, signal);
        if (left === 0) result.removed.push(node);
        else {
          result.draining[node] = left;
          draining.push(node);
        }
      } catch (err) {
        failed(`removal of node ${node}`, err, { node });
      }
    });

    try {
      result.forceDeleted = await this.syncer.forceDeleteDue([...configured, ...draining], signal);
    } catch (err) {
      failed('due force deletes', err);
    }
    if (result.failures.length > 0) throw new ReconcileIncompleteError(result);
    return result;
  }

  /** Creates kube-node-lease when missing (as the kubelet's cluster bootstrap would). Returns whether it did. */
  private async ensureLeaseNamespace(): Promise<boolean> {
    const { core } = this.options.deps.kube;
    try {
      await core.readNamespace({ name: NODE_LEASE_NAMESPACE });
      return false;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    try {
      await core.createNamespace({ body: { metadata: { name: NODE_LEASE_NAMESPACE } } });
      this.options.log.info({ namespace: NODE_LEASE_NAMESPACE }, 'created the node lease namespace');
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  /**
   * Registers a configured node whose Node is missing, the way the heartbeat
   * does (registration, lease and status). Returns whether it had to.
   */
  private async ensureNode(name: string, signal?: AbortSignal): Promise<boolean> {
    const { deps, log } = this.options;
    const { core } = deps.kube;
    try {
      await core.readNode({ name });
      return false;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const nodeLog = log.child({ node: name });
    const controller = buildNodeController(deps, { name, settings: deps.config.node, log });
    await controller.start(signal);
    nodeLog.info('Node missing (new, or deleted behind our back): registered it');
    return true;
  }

  /**
   * Re-syncs, through pod-sync's own reconcile, every pod of `node` whose
   * known-pod record says pod-sync has something left to do (no record, a
   * record of another uid, a spec not applied, a deletion not handled): the
   * events that should have triggered it were lost. The decision is pod-sync's
   * own, taken on the same kind of state it reads.
   */
  private async resyncNode(
    node: string,
    read: NodePodsRead | undefined,
    signal: AbortSignal | undefined,
    failed: (what: string, err: unknown, fields: Record<string, unknown>) => void,
  ): Promise<number> {
    const { deps } = this.options;
    const records = new Map<string, KnownPod>();
    // The dangling pass's reads, when it got that far: the same reads in the same order, a moment
    // earlier. Records it forgot belong to pods the list lacks, which a re-sync does not look at.
    for (const r of read?.records ?? (await this.knownPods.list(node))) records.set(podKey(r), r);
    const pods = read?.apiPods ?? (await listNodePods(deps.kube.core, node)).pods;
    const now = deps.clock.now();
    const stale = pods.filter((pod) => {
      const namespace = pod.metadata?.namespace ?? '';
      const name = pod.metadata?.name ?? '';
      const record = records.get(podKey({ namespace, name }));
      if (eventLikelyInFlight(pod, record, now, deps.config.reconcile.resyncGraceMs)) return false;
      const step = decideSync(
        { namespace, name, pod, records: record ? [record] : [] },
        { nodes: deps.config.nodeNames, now },
      );
      // wait: another invocation is on it right now.
      return step.kind !== 'skip' && step.kind !== 'ignore' && step.kind !== 'wait';
    });
    let resynced = 0;
    await mapSettledLimit(stale, deps.config.pods.maxParallel, async (pod) => {
      const key = podKey(pod.metadata);
      try {
        const r = await this.podReconciler(deps.config.nodeNames, signal).reconcile(
          pod.metadata?.namespace ?? '',
          pod.metadata?.name ?? '',
        );
        resynced++;
        this.options.log.info(
          { pod: key, uid: pod.metadata?.uid, node, outcome: r.outcome, steps: r.steps },
          'reconcile: re-synced a pod whose events were missed',
        );
      } catch (err) {
        failed(`re-sync of ${key}`, err, { pod: key, uid: pod.metadata?.uid });
      }
    });
    return resynced;
  }

  /**
   * A node that left the configuration: cordon it, finish the deletions of
   * its pods (through pod-sync's reconcile, for this node), and once no pod is
   * bound to it any more, delete its provider leftovers, its Lease and its
   * Node, and forget it. Running pods are left to drain (kubectl drain, or
   * the node lifecycle controller's eviction once its lease expires).
   * Returns how many pods are still bound to it (0: removed).
   */
  private async removeNode(node: string, signal?: AbortSignal): Promise<number> {
    const { deps, log } = this.options;
    const { core, coordination } = deps.kube;
    const nodeLog = log.child({ node });
    let exists = true;
    let cordoned = false;
    try {
      cordoned = (await core.readNode({ name: node })).spec?.unschedulable === true;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      exists = false;
    }
    const { pods } = await listNodePods(core, node);
    if (pods.length > 0) {
      if (exists && !cordoned) {
        await core.patchNode({ name: node, body: { spec: { unschedulable: true } } }, mergePatch);
        nodeLog.info(
          { pods: pods.length },
          'node removed from the configuration: cordoned, waiting for its pods',
        );
      }
      const terminating = pods.filter((p) => p.metadata?.deletionTimestamp);
      if (terminating.length > 0) await this.finishDeletions(node, terminating, signal);
      return pods.length;
    }
    // The pods are gone: nothing of ours may stay behind in the provider either.
    await this.cleaner.cleanNode(node, signal);
    await ignoreNotFound(coordination.deleteNamespacedLease({ name: node, namespace: NODE_LEASE_NAMESPACE }));
    if (exists) await ignoreNotFound(core.deleteNode({ name: node }));
    await this.owned.forget(node);
    nodeLog.info('node removed from the configuration and without pods: deleted its Node and Lease');
    return 0;
  }

  private async finishDeletions(node: string, pods: V1Pod[], signal?: AbortSignal): Promise<void> {
    const reconciler = this.podReconciler([node], signal);
    const settled = await mapSettledLimit(pods, this.options.deps.config.pods.maxParallel, (pod) =>
      reconciler.reconcile(pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''),
    );
    const failure = settled.find((s) => s.status === 'rejected');
    if (failure) throw failure.reason;
  }

  private podReconciler(nodes: readonly string[], signal?: AbortSignal): PodReconciler {
    const { deps, log, owner } = this.options;
    return createPodReconciler(deps, {
      log,
      owner,
      nodes,
      waitUntil: deps.clock.monotonic() + CLAIM_WAIT_MS,
      ...(signal ? { signal } : {}),
    });
  }
}

async function ignoreNotFound(request: Promise<unknown>): Promise<void> {
  try {
    await request;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Whether `pod` was created (and has no known-pod record yet) or was deleted
 * less than `graceMs` ago, so that its event is most likely still on its way
 * to pod-sync. The reconciler leaves such pods to their events: in a burst it
 * would otherwise read and sync each of them a second time (docs/reconciler.md,
 * "What reconcileAll repairs"), or force-delete a pod pod-status handed off to the event its
 * terminated status woke (the record's handedOffUntil). A lost event is
 * still repaired, one grace period later.
 */
export function eventLikelyInFlight(
  pod: V1Pod,
  record: KnownPod | undefined,
  now: number,
  graceMs: number,
): boolean {
  if (graceMs <= 0) return false;
  // pod-status wrote the terminated status: its event has pod-sync force-delete the pod.
  if (record?.handedOffUntil !== undefined && Date.parse(record.handedOffUntil) > now) return true;
  const deletion = pod.metadata?.deletionTimestamp;
  if (deletion !== undefined) {
    // deletionTimestamp is the time of the delete call plus the grace period the call gave.
    const requestedAt = new Date(deletion).getTime() - (pod.metadata?.deletionGracePeriodSeconds ?? 0) * 1000;
    return now - requestedAt < graceMs;
  }
  if (record) return false;
  const created = pod.metadata?.creationTimestamp;
  return created !== undefined && now - new Date(created).getTime() < graceMs;
}
