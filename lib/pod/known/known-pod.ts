import type { KnownPodClaim } from './known-pod-claim.ts';

/**
 * What virtual-kubelet keeps in its knownPods map, in DynamoDB: one record per
 * pod on one of our nodes, at pk `pods#<node>`, sk `<namespace>/<name>`.
 *
 * `version` orders pod-sync's writes: every write that changes what pod-sync
 * decides from (claim, applied hash, force-delete time, forget) is conditional
 * on the version it read and bumps it, so concurrent, duplicate or reordered
 * pod-sync invocations of the same key cannot lose each other's updates.
 * Completing or releasing a claim is conditional on the claim's token instead,
 * and `statusHash` (written by pod-status, and by pod-sync when the provider
 * reports status at once) is a compare-and-set on the hash itself that
 * leaves the version alone, so status writes never make a pod-sync
 * invocation retry.
 */
export interface KnownPod {
  node: string;
  namespace: string;
  name: string;
  uid: string;
  /** Hash of the spec and metadata last applied in the provider (status and resourceVersion ignored); absent until applied. */
  appliedHash?: string;
  /** The `activeDeadlineSeconds` of the spec last applied; absent when it has none (active-deadline.ts). */
  activeDeadlineSeconds?: number;
  /** A pod-sync invocation is calling the provider for this pod (see {@link KnownPodClaim}). */
  claim?: KnownPodClaim;
  /** Hash of the pod status we last wrote to the API server. */
  statusHash?: string;
  /**
   * ISO wall-clock time until which a pod-sync invocation that completed its
   * claim before writing the status the provider reported (release 0.1.0's
   * order) is still writing it; pod-status leaves the pod alone meanwhile.
   * This release writes that status under the claim and records it with the
   * completion, so it never sets the mark; pod-status still honours it while
   * both releases run, every status write removes it, and a crashed writer's
   * mark expires.
   */
  pushUntil?: string;
  /**
   * ISO time after which the pod is force-deleted from the API server (grace
   * period over). Set only after the provider was told to delete the pod, so
   * it also means "provider delete done" for this deletionTimestamp.
   */
  forceDeleteAt?: string;
  /**
   * ISO time until which the force delete is left to pod-sync (the event of
   * the terminated status pod-status wrote): others force-delete the pod
   * only after it (that event lost). The due index sorts the record by it.
   */
  handedOffUntil?: string;
  /** Optimistic-concurrency version, 1 on create. */
  version: number;
}

/** What identifies a record: its node, its key and the uid of the pod it is about. */
export type KnownPodIdentity = Pick<KnownPod, 'node' | 'namespace' | 'name' | 'uid'>;
