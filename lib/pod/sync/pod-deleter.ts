import type { Clock } from '../../clock.ts';
import { isNotFound } from '../../kube/client.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { podKey } from '../../kube/pod-key.ts';
import type { Logger } from '../../log/logger.ts';
import type { PodProvider } from '../../provider/provider.ts';
import { errorMessage } from '../../util/error-message.ts';
import type { KnownPod, KnownPodStore } from '../known/known-pods.ts';
import { deleteInProvider, deleteUidInProvider } from '../provider-delete.ts';
import { isTerminalPhase, terminatedStatus } from '../status/pod-status-builders.ts';
import { forceDeletePod, podRef, writePodStatus } from '../status/pod-status-writes.ts';
import { POD_EVENT_REASONS, type PodEventRecorder } from './pod-events.ts';
import type { SyncState, SyncStep } from './pod-sync-decision.ts';
import { PodSyncRetryError, type SyncOutcome } from './pod-sync-result.ts';

/**
 * The deleting steps of a pod reconcile: in the provider (a stale uid, an
 * orphan, a terminating pod, its grace period's end recorded) and from the API
 * server (a terminating pod that no longer runs). deletePod may be called many
 * times, so these take no claim; each is followed by a conditional record
 * write, and a lost write has the reconcile read everything again.
 */

export interface PodDeleterOptions {
  core: CoreApi;
  provider: PodProvider;
  knownPods: KnownPodStore;
  events: PodEventRecorder;
  /** Our virtual nodes: only pods bound to one of them are touched. */
  nodes: readonly string[];
  clock: Clock;
  signal?: AbortSignal;
}

export class PodDeleter {
  constructor(private readonly options: PodDeleterOptions) {}

  /** A record about a pod that is gone or replaced: its uid deleted in the provider, the record forgotten. */
  async forgetStale(record: KnownPod, log: Logger): Promise<void> {
    const { provider, knownPods, signal } = this.options;
    await deleteUidInProvider(provider, record, signal);
    await knownPods.delete(record);
    log.info({ staleUid: record.uid }, 'pod gone or replaced: deleted in provider and forgotten');
  }

  /**
   * virtual-kubelet's syncHandler for a pod missing from the API server:
   * deletes the provider's pod of that name, unless its pod exists after all
   * (created since we read: undefined, read again).
   */
  async deleteOrphan(state: SyncState, log: Logger): Promise<SyncOutcome | undefined> {
    const { provider, nodes, core, signal } = this.options;
    const held = await provider.getPod(state.namespace, state.name, signal);
    const uid = held?.metadata?.uid;
    if (!held || !uid || !nodes.includes(held.spec?.nodeName ?? '')) return 'absent';
    // The provider had it, so its pod existed before this read: if the read
    // lacks it, that uid is gone for good.
    try {
      const pod = await core.readNamespacedPod({ namespace: state.namespace, name: state.name });
      if (pod.metadata?.uid === uid) return undefined;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    await deleteInProvider(provider, held, signal);
    log.info({ orphanUid: uid }, 'pod gone from the API server: deleted in provider');
    return 'orphan-deleted';
  }

  /** A terminating pod that no longer runs: deleted from the API server at once, then in the provider, then forgotten. */
  async forceDelete(step: Extract<SyncStep, { kind: 'force-delete' }>, log: Logger): Promise<SyncOutcome> {
    const { core, knownPods, provider, signal } = this.options;
    const result = await forceDeletePod(core, podRef(step.pod));
    log.info({ result }, 'terminating and not running: force-deleted from the API server');
    try {
      await deleteInProvider(provider, step.pod, signal);
    } catch (err) {
      // Best effort: the DELETED event and the dangling-pod pass try again.
      log.warn({ err }, 'provider delete after force delete failed');
    }
    if (step.record) await knownPods.delete(step.record);
    return 'force-deleted';
  }

  /**
   * A terminating pod known not to run any more (decideFromRecords, or
   * pod-watch's `not-running`): deleted from the API server by uid without
   * reading it, then its provider pod of that uid, then its record: the one
   * given, or without reading it unless a create holds it (the DELETED event
   * that follows deals with what is left).
   */
  async forceDeleteKnown(
    step: Extract<SyncStep, { kind: 'force-delete-known' }>,
    log: Logger,
  ): Promise<SyncOutcome> {
    const { core, knownPods, provider, signal } = this.options;
    const result = await forceDeletePod(core, step.pod);
    log.info({ result }, 'terminating and not running: force-deleted from the API server');
    try {
      await deleteUidInProvider(provider, step.pod, signal);
    } catch (err) {
      log.warn({ err }, 'provider delete after force delete failed');
    }
    if (step.record) await knownPods.delete(step.record);
    else await knownPods.forgetDone(step.pod, this.options.clock.now());
    return 'force-deleted';
  }

  /** The pod of this uid is gone for good and nothing of ours remembers it: its provider pod, if any, is deleted. */
  async deleteGone(step: Extract<SyncStep, { kind: 'delete-gone' }>, log: Logger): Promise<SyncOutcome> {
    const { provider, signal } = this.options;
    if (!(await deleteUidInProvider(provider, step.pod, signal))) return 'absent';
    log.info({ orphanUid: step.pod.uid }, 'pod gone from the API server: deleted in provider');
    return 'orphan-deleted';
  }

  /**
   * A terminating pod that still runs: deleted in the provider, with an event
   * either way. When the provider no longer has the pod (DeletedPodStatus
   * `stopped`, or not found), the kubelet's order follows in this same
   * reconcile: its terminated status written against the pod just read (as
   * pod-status would write it at its next poll), then the pod force-deleted
   * by uid and, beside it, its record forgotten (a record changed meanwhile
   * reads everything again). Otherwise (the provider stops it over the grace
   * period), or when the status write fails, the grace period's end is
   * recorded so that pod-status reports the pod terminated, or
   * force-deletes it, then.
   */
  async providerDelete(
    step: Extract<SyncStep, { kind: 'provider-delete' }>,
    log: Logger,
  ): Promise<SyncOutcome> {
    const { core, knownPods, events, provider, signal } = this.options;
    let result: 'deleted' | 'stopped' | 'not-found';
    try {
      result = await deleteInProvider(provider, step.pod, signal);
    } catch (err) {
      const message = errorMessage(err);
      await events.record(step.pod, 'Warning', POD_EVENT_REASONS.deleteFailed, message);
      throw new PodSyncRetryError(
        `${podKey(step.pod.metadata)}: provider delete failed: ${message}`,
        'provider',
        { cause: err },
      );
    }
    const stopped = result !== 'deleted';
    const [terminated] = await Promise.all([
      stopped ? this.writeTerminated(step, log) : false,
      result === 'not-found'
        ? undefined
        : events.record(
            step.pod,
            'Normal',
            POD_EVENT_REASONS.deleteSuccess,
            'Delete pod in provider successfully',
          ),
    ]);
    if (terminated) {
      // Side by side: a failed delete fails the invocation, whose retry finds the pod terminating
      // and not running (force-delete); a lost record write reads everything again.
      const [deleted, forgotten] = await Promise.allSettled([
        forceDeletePod(core, podRef(step.pod)),
        step.record ? knownPods.delete(step.record) : undefined,
      ]);
      if (deleted.status === 'rejected') throw deleted.reason;
      if (forgotten.status === 'rejected') throw forgotten.reason;
      log.info(
        { result: deleted.value },
        'terminating: deleted in provider, reported terminated and force-deleted from the API server',
      );
      return 'force-deleted';
    }
    await knownPods.markTerminating(
      step.record,
      { ...podRef(step.pod), node: step.node },
      step.forceDeleteAt,
    );
    log.info(
      { forceDeleteAt: step.forceDeleteAt },
      'terminating: deleted in provider, force delete scheduled',
    );
    return 'deleted-in-provider';
  }

  /**
   * The terminated status pod-status writes for a pod the provider no longer
   * has, written now against the pod this reconcile read (a 409 reads it
   * again). Whether it is the pod's status now; a failed write is logged and
   * left to pod-status's poll.
   */
  private async writeTerminated(
    step: Extract<SyncStep, { kind: 'provider-delete' }>,
    log: Logger,
  ): Promise<boolean> {
    const now = this.options.clock.now();
    try {
      const written = await writePodStatus(
        this.options.core,
        podRef(step.pod),
        (pod) => (isTerminalPhase(pod.status?.phase) ? undefined : terminatedStatus(pod.status, now)),
        { pod: step.pod },
      );
      return written === 'written' || written === 'unchanged';
    } catch (err) {
      log.warn(
        { err },
        'could not write the terminated status after the provider delete; pod-status polls it',
      );
      return false;
    }
  }
}
