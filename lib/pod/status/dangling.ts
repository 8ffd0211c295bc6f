import type { V1Pod } from '@kubernetes/client-node';
import { listNodePods } from '../../kube/node-pods.ts';
import { podKey } from '../../kube/pod-key.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import { isClaimLive, type KnownPod, KnownPodConflictError } from '../known/known-pods.ts';
import { deleteInProvider, deleteUidInProvider } from '../provider-delete.ts';
import type { PodStatusSyncerOptions } from './pod-status-syncer.ts';

/**
 * virtual-kubelet's deleteDanglingPods (node/podcontroller.go), per node and
 * with uids: provider pods whose pod the API server no longer has (same
 * namespace/name *and* uid) are deleted in the provider; known-pod records
 * whose pod is gone are cleaned up the way pod-sync would (provider delete,
 * forget), so a lost DELETED event leaves nothing behind.
 *
 * Order matters: records, then the provider's list, then the API server's
 * (a consistent list from etcd). Anything a record or the provider has
 * existed in the API server before these reads began, because pod-sync
 * creates both only after reading the pod; so if the later API list lacks it,
 * it was deleted, and deleting it is never a race with its creation.
 */

/** The pod-status poller's ports, and the page size of the API server's list (default 500). */
export interface DanglingPodCleanerOptions extends PodStatusSyncerOptions {
  pageSize?: number;
}

/** What one pass over one node did. */
export interface DanglingResult {
  node: string;
  apiPods: number;
  providerPods: number;
  /** Provider pods deleted because the API server does not have them. */
  deleted: number;
  /** Records forgotten because their pod is gone. */
  forgotten: number;
  failed: number;
}

/**
 * The known-pod records and the API server's pods of one node as a pass read
 * them, records first: what a re-sync of the node reads too, in the same order.
 */
export interface NodePodsRead {
  records: KnownPod[];
  apiPods: V1Pod[];
}

export class DanglingPodCleaner {
  constructor(private readonly options: DanglingPodCleanerOptions) {}

  async cleanNode(node: string, signal?: AbortSignal): Promise<DanglingResult> {
    return (await this.cleanNodeRead(node, signal)).result;
  }

  /** {@link cleanNode}, returning what it read as well, for a caller that needs the same reads next. */
  async cleanNodeRead(
    node: string,
    signal?: AbortSignal,
  ): Promise<{ result: DanglingResult; read: NodePodsRead }> {
    const { core, provider, knownPods, clock, log, maxParallel } = this.options;
    const records = await knownPods.list(node);
    const providerPods = await provider.listPods(node, signal);
    const { pods: apiPods } = await listNodePods(core, node, this.options.pageSize);
    const apiUids = new Map(apiPods.map((p) => [podKey(p.metadata), p.metadata?.uid]));
    const result: DanglingResult = {
      node,
      apiPods: apiPods.length,
      providerPods: providerPods.length,
      deleted: 0,
      forgotten: 0,
      failed: 0,
    };

    const failed = (fields: Record<string, unknown>, err: unknown, what: string) => {
      result.failed++;
      if (!signal?.aborted) log.warn({ ...fields, node, err }, `dangling cleanup: ${what} failed`);
    };

    const dangling = providerPods.filter((p) => apiUids.get(podKey(p.metadata)) !== p.metadata?.uid);
    const deletedKeys = new Set<string>();
    await mapSettledLimit(dangling, maxParallel, async (pod) => {
      const fields = { pod: podKey(pod.metadata), uid: pod.metadata?.uid };
      try {
        signal?.throwIfAborted();
        await deleteInProvider(provider, pod, signal);
        deletedKeys.add(podKey(pod.metadata));
        result.deleted++;
        log.info({ ...fields, node }, 'deleted dangling pod in provider');
      } catch (err) {
        failed(fields, err, 'provider delete');
      }
    });

    const gone = records.filter(
      (r) => apiUids.get(podKey(r)) !== r.uid && !isClaimLive(r.claim, clock.now()),
    );
    await mapSettledLimit(gone, maxParallel, async (record) => {
      const fields = { pod: podKey(record), uid: record.uid };
      try {
        signal?.throwIfAborted();
        if (!deletedKeys.has(podKey(record)) && (await deleteUidInProvider(provider, record, signal))) {
          result.deleted++;
        }
        if (await this.forget(record)) {
          result.forgotten++;
          log.info({ ...fields, node }, 'forgot known pod whose pod is gone');
        }
      } catch (err) {
        failed(fields, err, 'forget');
      }
    });
    return { result, read: { records, apiPods } };
  }

  /** False when someone (pod-sync) changed the record since it was read: they own it now. */
  private async forget(record: KnownPod): Promise<boolean> {
    try {
      await this.options.knownPods.delete(record);
      return true;
    } catch (err) {
      if (!(err instanceof KnownPodConflictError)) throw err;
      return false;
    }
  }
}
