import type { CoreApi } from '../../kube/core-api.ts';
import type { Logger } from '../../log/logger.ts';
import { type KnownPod, KnownPodConflictError, type KnownPodStore } from '../known/known-pods.ts';
import type { WatchBookmark } from './watch-bookmark.ts';
import type { PodLike } from './watch-events.ts';

/**
 * Where a node's watcher starts: from its bookmark, or with a (re)list.
 *
 * A bookmark is only worth resuming from on the cluster, and the etcd
 * history, it was taken on. Two cases make it worthless without any error:
 *
 * - Another cluster: the deployment's table was pointed at a new cluster
 *   (a second `npm start` gets a fresh control plane and keeps DynamoDB
 *   Local). The bookmark records the cluster's identity, the uid of its
 *   kube-system namespace (created once per cluster, never deleted); a
 *   different uid means a new cluster.
 * - The same cluster after an etcd restore from a backup: the uid survives,
 *   but the bookmark may be ahead of the cluster's current resourceVersion.
 *
 * In both cases a watch from the bookmark is useless: kube-apiserver 1.20
 * answers a watch from a resourceVersion it has not reached with nothing at
 * all, no event and no error, until its own resourceVersions pass the
 * bookmark (newer releases fail it with "Too large resource version"
 * instead). So the watcher relists.
 *
 * Comparing resourceVersions assumes they are etcd revisions (decimal
 * integers that grow with every write), which they are for every
 * etcd-backed kube-apiserver. Kubernetes documents them as opaque: when
 * either is not a decimal integer, no order is assumed and the bookmark is
 * used as it is.
 */

/** Why a (re)list happened. */
export type RelistReason =
  /** No bookmark yet. */
  | 'no-bookmark'
  /** The bookmark's resourceVersion expired (410 Gone). */
  | 'expired'
  /** The bookmark was taken on another cluster. */
  | 'other-cluster'
  /** The bookmark is ahead of the cluster's current resourceVersion (an etcd restore). */
  | 'ahead';

/** What the watcher asks the API server to decide where to start. */
export interface ClusterProbe {
  /** The cluster's identity: the uid of its kube-system namespace. */
  uid(): Promise<string>;
  /** The cluster's current resourceVersion. */
  currentResourceVersion(): Promise<string>;
}

export type ResumePoint = { from: string } | { relist: RelistReason };

/** True when `rv` is a later etcd revision than `current`; false when either is not a decimal integer. */
export function isResourceVersionAhead(rv: string, current: string): boolean {
  const integer = /^\d+$/;
  if (!integer.test(rv) || !integer.test(current)) return false;
  return BigInt(rv) > BigInt(current);
}

/**
 * Decides where to start: the bookmark, or a relist and why. Asks the API
 * server for the current resourceVersion only when the bookmark is of this
 * cluster. A bookmark without a cluster identity (written before it was
 * recorded) is taken to be of this cluster.
 */
export async function resumePoint(
  bookmark: WatchBookmark | undefined,
  cluster: ClusterProbe,
): Promise<ResumePoint> {
  if (!bookmark) return { relist: 'no-bookmark' };
  if (bookmark.clusterUid !== undefined && bookmark.clusterUid !== (await cluster.uid()))
    return { relist: 'other-cluster' };
  if (isResourceVersionAhead(bookmark.resourceVersion, await cluster.currentResourceVersion()))
    return { relist: 'ahead' };
  return { from: bookmark.resourceVersion };
}

/** The namespace whose uid identifies a cluster. */
const IDENTITY_NAMESPACE = 'kube-system';
/**
 * An empty range to list: a list without a resourceVersion is read from etcd
 * and answered at its current revision, and listing pods of a namespace
 * that holds none costs etcd nothing (no pods run in kube-node-lease).
 */
const PROBE_NAMESPACE = 'kube-node-lease';

/**
 * The probe over the API server. The identity is read once per probe
 * (one probe per invocation); the resourceVersion on every call, since it
 * must be read after the bookmark it is compared with.
 */
export function clusterProbe(core: CoreApi): ClusterProbe {
  let uid: Promise<string> | undefined;
  return {
    uid() {
      uid ??= core.readNamespace({ name: IDENTITY_NAMESPACE }).then((ns) => {
        const value = ns.metadata?.uid;
        if (!value) throw new Error(`namespace ${IDENTITY_NAMESPACE} has no uid`);
        return value;
      });
      uid.catch(() => {
        uid = undefined;
      });
      return uid;
    },
    async currentResourceVersion() {
      const list = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE, limit: 1 });
      const rv = list.metadata?.resourceVersion;
      if (!rv) throw new Error('a pod list returned no resourceVersion');
      return rv;
    },
  };
}

/**
 * After a bookmark of another cluster: forgets the known-pod records of
 * `node` whose pod (by uid) is not in this cluster's list, without a GONE
 * event, so that pod-sync never calls the provider for a pod of the other
 * cluster (those provider pods are left to the dangling-pod sweep, which
 * deletes what this cluster does not know). A record that changed meanwhile
 * (pod-sync just wrote it for this cluster) is kept. Returns the records
 * that remain.
 */
export async function forgetAnotherClustersPods(
  knownPods: KnownPodStore,
  known: readonly KnownPod[],
  listed: readonly PodLike[],
  log: Logger,
): Promise<KnownPod[]> {
  const uids = new Set(listed.map((p) => p.metadata?.uid));
  const kept: KnownPod[] = [];
  for (const record of known) {
    if (uids.has(record.uid)) {
      kept.push(record);
      continue;
    }
    try {
      await knownPods.delete(record);
      log.info(
        { pod: `${record.namespace}/${record.name}`, uid: record.uid },
        'known pod of another cluster forgotten',
      );
    } catch (err) {
      if (!(err instanceof KnownPodConflictError)) throw err;
      kept.push(record);
    }
  }
  return kept;
}
