import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { isNotFound } from '../kube/client.ts';
import { podKey } from '../kube/pod-key.ts';
import type { Logger } from '../log/logger.ts';
import { isProviderNotFound, type PodProvider } from '../provider/provider.ts';
import { errorMessage } from '../util/error-message.ts';
import type { KnownPodIdentity, KnownPodStore } from './known-pods.ts';
import { POD_EVENT_REASONS, type PodEventRecorder } from './pod-events.ts';
import { forceDeletePod, podRef } from './pod-status-writes.ts';
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
  core: CoreV1Api;
  provider: PodProvider;
  knownPods: KnownPodStore;
  events: PodEventRecorder;
  /** Our virtual nodes: only pods bound to one of them are touched. */
  nodes: readonly string[];
  signal?: AbortSignal;
}

export class PodDeleter {
  constructor(private readonly options: PodDeleterOptions) {}

  /** Deletes the provider's pod of this name if it is the record's uid (never a newer pod's). */
  async deleteUidInProvider(record: KnownPodIdentity): Promise<void> {
    const { provider, signal } = this.options;
    const current = await provider.getPod(record.namespace, record.name, signal);
    if (current?.metadata?.uid !== record.uid) return;
    await this.deleteInProvider(current);
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
    await this.deleteInProvider(held);
    log.info({ orphanUid: uid }, 'pod gone from the API server: deleted in provider');
    return 'orphan-deleted';
  }

  /** A terminating pod that no longer runs: deleted from the API server at once, then in the provider, then forgotten. */
  async forceDelete(step: Extract<SyncStep, { kind: 'force-delete' }>, log: Logger): Promise<SyncOutcome> {
    const { core, knownPods } = this.options;
    const result = await forceDeletePod(core, podRef(step.pod));
    log.info({ result }, 'terminating and not running: force-deleted from the API server');
    try {
      await this.deleteInProvider(step.pod);
    } catch (err) {
      // Best effort: the DELETED event and the dangling-pod pass try again.
      log.warn({ err }, 'provider delete after force delete failed');
    }
    if (step.record) await knownPods.delete(step.record);
    return 'force-deleted';
  }

  /**
   * A terminating pod that still runs: deleted in the provider, with an event
   * either way, and the grace period's end recorded so that pod-status
   * force-deletes it then.
   */
  async providerDelete(
    step: Extract<SyncStep, { kind: 'provider-delete' }>,
    log: Logger,
  ): Promise<SyncOutcome> {
    const { knownPods, events } = this.options;
    try {
      const result = await this.deleteInProvider(step.pod);
      if (result === 'deleted') {
        await events.record(
          step.pod,
          'Normal',
          POD_EVENT_REASONS.deleteSuccess,
          'Delete pod in provider successfully',
        );
      }
    } catch (err) {
      const message = errorMessage(err);
      await events.record(step.pod, 'Warning', POD_EVENT_REASONS.deleteFailed, message);
      throw new PodSyncRetryError(
        `${podKey(step.pod.metadata)}: provider delete failed: ${message}`,
        'provider',
        {
          cause: err,
        },
      );
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

  /** deletePod, with "the provider does not have it" counted as done. */
  private async deleteInProvider(pod: V1Pod): Promise<'deleted' | 'not-found'> {
    try {
      await this.options.provider.deletePod(pod, this.options.signal);
      return 'deleted';
    } catch (err) {
      if (isProviderNotFound(err)) return 'not-found';
      throw err;
    }
  }
}
