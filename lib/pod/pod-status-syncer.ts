import type { CoreV1Api, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import { podKey } from '../kube/pod-key.ts';
import type { Logger } from '../log/logger.ts';
import type { PodProvider } from '../provider/provider.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import { isClaimLive, type KnownPod, KnownPodConflictError, type KnownPodStore } from './known-pods.ts';
import {
  isTerminalPhase,
  LOST_MARK,
  lostStatus,
  TERMINATED_MARK,
  terminatedStatus,
} from './pod-status-builders.ts';
import { forceDeletePod, writeRecordedStatus, writeReportedStatus } from './pod-status-writes.ts';

/**
 * Pod status from the provider to the API server, polled (virtual-kubelet's
 * node/sync.go for providers without push notifications), and the force
 * deletes whose grace period ended.
 */

export interface PodStatusSyncerOptions {
  core: CoreV1Api;
  provider: PodProvider;
  knownPods: KnownPodStore;
  clock: Clock;
  log: Logger;
  /** Pods handled at once. */
  maxParallel: number;
}

/**
 * Whether pod-status looks at a known pod's status this round. Not while a
 * pod-sync invocation holds its claim (it is creating or updating the pod)
 * nor while the record says that invocation is writing the status the
 * provider reported with it (`pushUntil`, removed once that status is
 * recorded): writing here as well would write the same status twice, and the
 * next round writes it if pod-sync did not. Nor, when the provider's list
 * lacks it, before anything was applied or deleted in the provider (never
 * created: nothing to report, nothing lost).
 */
export function shouldPollStatus(
  record: Pick<KnownPod, 'claim' | 'pushUntil' | 'appliedHash' | 'forceDeleteAt'>,
  listed: boolean,
  nowMs: number,
): boolean {
  if (isClaimLive(record.claim, nowMs)) return false;
  if (record.pushUntil !== undefined && Date.parse(record.pushUntil) > nowMs) return false;
  return listed || record.appliedHash !== undefined || record.forceDeleteAt !== undefined;
}

/** What one round did on one node, for logs, metrics and tests. */
export interface NodeStatusResult {
  node: string;
  /** Known pods looked at. */
  pods: number;
  /** Statuses written from the provider. */
  written: number;
  /** Pods reported Failed/NotFound because the provider lost them. */
  lost: number;
  /** Pods reported terminated because the provider finished deleting them. */
  terminated: number;
  /** Pods whose step failed (logged); the next round tries again. */
  failed: number;
}

type PodOutcome = 'none' | 'unchanged' | 'written' | 'lost' | 'terminated' | 'gone';

/**
 * One status round: for every known pod of a node, writes the provider's
 * status when it changed since the last write (statusHash), reports pods the
 * provider lost, and reports pods whose provider delete finished.
 *
 * Reads the records before the provider's list, so a record that says
 * "applied" was applied before the list was taken; and confirms a pod missing
 * from the list with getPod, because a provider's list may lag (the mock's is
 * an index). Together these keep a pod that is being created from being
 * reported lost, which virtual-kubelet guards against differently (no "lost"
 * verdict within a minute of creation unless Running); we need no such delay.
 *
 * Pods under a pod-sync claim or push mark are left to that invocation
 * (shouldPollStatus), so a provider that reports status at once has each
 * status written once, by pod-sync, and this loop writes only what changes
 * later.
 *
 * Unlike virtual-kubelet, a pod whose status says ProviderFailed (a create
 * that failed and is being retried) still gets the provider's status once the
 * provider has it, so a retried create that succeeds shows Running. Pods
 * already Succeeded or Failed in the API server are never written again.
 */
export class PodStatusSyncer {
  constructor(private readonly options: PodStatusSyncerOptions) {}

  async syncNode(node: string, signal?: AbortSignal): Promise<NodeStatusResult> {
    const { knownPods, provider, log, maxParallel } = this.options;
    const records = await knownPods.list(node);
    const listedAt = this.options.clock.now();
    const listed = new Map((await provider.listPods(node, signal)).map((p) => [podKey(p.metadata), p]));
    const result: NodeStatusResult = {
      node,
      pods: records.length,
      written: 0,
      lost: 0,
      terminated: 0,
      failed: 0,
    };
    const settled = await mapSettledLimit(records, maxParallel, (record) => {
      signal?.throwIfAborted();
      const inList = listed.get(podKey(record));
      const reading = inList?.metadata?.uid === record.uid ? { pod: inList, readAtMs: listedAt } : undefined;
      return this.syncPod(record, reading, signal);
    });
    settled.forEach((s, i) => {
      if (s.status === 'fulfilled') {
        if (s.value === 'written') result.written++;
        if (s.value === 'lost') result.lost++;
        if (s.value === 'terminated') result.terminated++;
        return;
      }
      result.failed++;
      const r = records[i];
      if (!signal?.aborted) {
        log.warn({ err: s.reason, pod: r && podKey(r), uid: r?.uid, node }, 'pod status sync failed');
      }
    });
    return result;
  }

  /** `listed`: the pod as the provider's list of the node reported it, and when that list began. */
  private async syncPod(
    record: KnownPod,
    listed: { pod: V1Pod; readAtMs: number } | undefined,
    signal?: AbortSignal,
  ): Promise<PodOutcome> {
    const { provider, clock } = this.options;
    if (!shouldPollStatus(record, listed !== undefined, clock.now())) return 'none';
    // Reported terminated after the provider delete: Succeeded, which no provider status replaces.
    if (record.forceDeleteAt && record.statusHash === TERMINATED_MARK) return 'unchanged';
    let reported = listed;
    if (!reported) {
      const readAtMs = clock.now();
      const got = await provider.getPod(record.namespace, record.name, signal);
      reported = got?.metadata?.uid === record.uid ? { pod: got, readAtMs } : undefined;
    }
    if (reported) {
      const written = await writeReportedStatus(this.options, record, reported.pod.status ?? {}, {
        readAtMs: reported.readAtMs,
      });
      if (written === 'written') this.logWritten(record, 'written');
      if (written === 'stale') this.options.log.debug(this.logFields(record), 'pod carries a newer status');
      return written === 'stale' ? 'unchanged' : written;
    }
    const now = clock.now();
    if (record.forceDeleteAt) {
      if (record.statusHash === TERMINATED_MARK) return 'unchanged';
      return this.write(record, TERMINATED_MARK, 'terminated', (pod) =>
        isTerminalPhase(pod.status?.phase) ? undefined : terminatedStatus(pod.status, now),
      );
    }
    if (record.statusHash === LOST_MARK) return 'unchanged';
    return this.write(record, LOST_MARK, 'lost', (pod) =>
      isTerminalPhase(pod.status?.phase) || pod.metadata?.deletionTimestamp
        ? undefined
        : lostStatus(pod.status, now),
    );
  }

  private async write(
    record: KnownPod,
    hash: string,
    outcome: PodOutcome,
    make: (pod: V1Pod) => V1PodStatus | undefined,
  ): Promise<PodOutcome> {
    const written = await writeRecordedStatus(this.options, record, hash, make);
    if (written === 'stale') return 'unchanged';
    if (written !== 'written') return written;
    this.logWritten(record, outcome);
    return outcome;
  }

  private logFields(record: KnownPod) {
    return { pod: podKey(record), uid: record.uid, node: record.node };
  }

  private logWritten(record: KnownPod, outcome: PodOutcome): void {
    const logFields = this.logFields(record);
    if (outcome === 'lost')
      this.options.log.warn(logFields, 'provider lost the pod: reported Failed/NotFound');
    else this.options.log.debug({ ...logFields, outcome }, 'pod status written');
  }

  /**
   * Force-deletes (grace 0, UID precondition) the pods of `nodes` whose grace
   * period ended, then forgets them. Returns how many were handled.
   */
  async forceDeleteDue(nodes: readonly string[], signal?: AbortSignal): Promise<number> {
    const { knownPods, core, clock, log, maxParallel } = this.options;
    const ours = new Set(nodes);
    const due = (await knownPods.dueForceDeletes(new Date(clock.now()).toISOString())).filter((r) =>
      ours.has(r.node),
    );
    let handled = 0;
    await mapSettledLimit(due, maxParallel, async (record) => {
      signal?.throwIfAborted();
      const fields = { pod: podKey(record), uid: record.uid, node: record.node };
      try {
        const result = await forceDeletePod(core, record);
        try {
          await knownPods.delete(record);
        } catch (err) {
          // Changed since the index was read: the next round sees the new record.
          if (!(err instanceof KnownPodConflictError)) throw err;
        }
        handled++;
        log.info(
          { ...fields, result, forceDeleteAt: record.forceDeleteAt },
          'grace period over: force-deleted pod',
        );
      } catch (err) {
        if (!signal?.aborted) log.warn({ ...fields, err }, 'force delete failed; retrying next round');
      }
    });
    return handled;
  }
}
