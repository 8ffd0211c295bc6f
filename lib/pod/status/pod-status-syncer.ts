import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { podKey } from '../../kube/pod-key.ts';
import type { Logger } from '../../log/logger.ts';
import { isProviderNotFound, type PodProvider } from '../../provider/provider.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import { forceDeleteDueAt } from '../known/known-pod-item.ts';
import {
  isClaimLive,
  isMarkLive,
  type KnownPod,
  KnownPodConflictError,
  type KnownPodStore,
} from '../known/known-pods.ts';
import type { PodEventRecorder } from '../sync/pod-events.ts';
import {
  DEADLINE_KILLED_MARK,
  DEADLINE_MARK,
  DEADLINE_MESSAGE,
  DEADLINE_REASON,
  deadlineExceededStatus,
  decideDeadline,
  failedByDeadline,
  podToKill,
} from './active-deadline.ts';
import {
  isTerminalPhase,
  LOST_MARK,
  lostStatus,
  TERMINATED_MARK,
  terminatedStatus,
} from './pod-status-builders.ts';
import {
  forceDeletePod,
  writePodStatus,
  writeRecordedStatus,
  writeReportedStatus,
} from './pod-status-writes.ts';

/**
 * Pod status from the provider to the API server, polled (virtual-kubelet's
 * node/sync.go for providers without push notifications), and the force
 * deletes whose grace period ended.
 */

export interface PodStatusSyncerOptions {
  core: CoreApi;
  provider: PodProvider;
  knownPods: KnownPodStore;
  clock: Clock;
  log: Logger;
  /** Pods handled at once. */
  maxParallel: number;
  /**
   * How long a pod reported terminated is left to the pod-sync invocation
   * its status write wakes before this syncer force-deletes it
   * (SVK_POD_FORCE_DELETE_HANDOFF_SECONDS): longer than an event may wait
   * for pod-sync. 0 or absent: force-deleted once its grace period is over.
   */
  handOffMs?: number;
  /** Where the DeadlineExceeded Event goes (active-deadline.ts); none when absent. */
  events?: PodEventRecorder;
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
  if (isMarkLive(record.pushUntil, nowMs)) return false;
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
  /** Pods failed and killed (or killed again) past their activeDeadlineSeconds. */
  deadline: number;
  /** Pods whose step failed (logged); the next round tries again. */
  failed: number;
}

type PodOutcome = 'none' | 'unchanged' | 'written' | 'lost' | 'terminated' | 'gone' | 'deadline';

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
  /** Records this syncer handed off to pod-sync (node, key and uid). */
  readonly #handedOff = new Set<string>();

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
      deadline: 0,
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
        if (s.value === 'deadline') result.deadline++;
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
    const deadline = decideDeadline(record, reported?.pod.status, clock.now());
    if (deadline === 'done') return 'unchanged';
    if (deadline === 'kill' && reported) return this.killAtDeadline(record, reported.pod, signal);
    if (deadline === 'fail' && reported) {
      const failed = await this.failAtDeadline(record, reported.pod, signal);
      if (failed) return failed;
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
      // The event of this write has pod-sync force-delete the pod (not running any more).
      const handOffMs = this.options.handOffMs ?? 0;
      const handOff =
        handOffMs > 0
          ? { forceDeleteAt: record.forceDeleteAt, until: new Date(now + handOffMs).toISOString() }
          : undefined;
      return this.write(
        record,
        TERMINATED_MARK,
        'terminated',
        (pod) => (isTerminalPhase(pod.status?.phase) ? undefined : terminatedStatus(pod.status, now)),
        handOff,
      );
    }
    if (record.statusHash === LOST_MARK) return 'unchanged';
    return this.write(record, LOST_MARK, 'lost', (pod) =>
      isTerminalPhase(pod.status?.phase) || pod.metadata?.deletionTimestamp
        ? undefined
        : lostStatus(pod.status, now),
    );
  }

  /**
   * Writes the DeadlineExceeded status if the pod, as read from the API
   * server, is past its deadline (or finds it written by an earlier round),
   * records DEADLINE_MARK, records the Event and kills the pod. Undefined
   * when the API server's pod is not past it (finished, or a start time or
   * deadline that says otherwise): its provider status is written as usual.
   */
  private async failAtDeadline(
    record: KnownPod,
    providerPod: V1Pod,
    signal?: AbortSignal,
  ): Promise<PodOutcome | undefined> {
    const { core, clock, events, log } = this.options;
    const now = clock.now();
    let target: V1Pod | undefined;
    const written = await writePodStatus(core, record, (pod) => {
      if (failedByDeadline(pod)) {
        target = pod;
        return undefined;
      }
      const status = deadlineExceededStatus(pod, now, providerPod.status?.startTime);
      target = status ? pod : undefined;
      return status;
    });
    if (written === 'gone') return 'gone';
    if (!target) return undefined;
    // Recorded before the kill: a kill that fails is tried again next round, and nothing writes over the pod.
    try {
      await this.options.knownPods.recordStatus(record, record.statusHash, DEADLINE_MARK);
    } catch (err) {
      if (!(err instanceof KnownPodConflictError)) throw err;
      // Another writer recorded a status meanwhile: the next round finds the pod Failed and marks it then.
      return 'written';
    }
    if (written === 'written') {
      log.info(
        { ...this.logFields(record), activeDeadlineSeconds: target.spec?.activeDeadlineSeconds },
        'pod past its active deadline: Failed, killing it',
      );
      await events?.record(target, 'Normal', DEADLINE_REASON, DEADLINE_MESSAGE);
    }
    return this.killAtDeadline({ ...record, statusHash: DEADLINE_MARK }, target, signal);
  }

  /** Tells the provider to stop the pod (gracefully, podToKill), then records DEADLINE_KILLED_MARK. */
  private async killAtDeadline(record: KnownPod, pod: V1Pod, signal?: AbortSignal): Promise<PodOutcome> {
    const { provider, knownPods, clock } = this.options;
    try {
      await provider.deletePod(podToKill(pod, clock.now()), signal);
    } catch (err) {
      if (!isProviderNotFound(err)) throw err;
    }
    try {
      await knownPods.recordStatus(record, DEADLINE_MARK, DEADLINE_KILLED_MARK);
    } catch (err) {
      // Recorded otherwise meanwhile: the next round kills it again if the provider still has it.
      if (!(err instanceof KnownPodConflictError)) throw err;
    }
    return 'deadline';
  }

  private async write(
    record: KnownPod,
    hash: string,
    outcome: PodOutcome,
    make: (pod: V1Pod) => V1PodStatus | undefined,
    handOff?: { forceDeleteAt: string; until: string },
  ): Promise<PodOutcome> {
    const written = await writeRecordedStatus(this.options, record, hash, make, handOff ? { handOff } : {});
    if (written === 'stale') return 'unchanged';
    if (handOff && written === 'written') this.#handedOff.add(knownPodRef(record));
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
   * Forgets, then force-deletes (grace 0, UID precondition) the pods of
   * `nodes` whose grace period ended; a pod handed off to pod-sync
   * (handedOffUntil) only once its hand-off ended too (the index sorts it by
   * the later time). Returns how many were handled.
   */
  async forceDeleteDue(nodes: readonly string[], signal?: AbortSignal): Promise<number> {
    const { knownPods, core, clock, log, maxParallel } = this.options;
    const ours = new Set(nodes);
    const now = new Date(clock.now()).toISOString();
    // The index may lag a write: a record this syncer handed off is left alone whatever it says.
    const due = (await knownPods.dueForceDeletes(now)).filter(
      (r) => ours.has(r.node) && !this.#handedOff.has(knownPodRef(r)) && (forceDeleteDueAt(r) ?? now) <= now,
    );
    let handled = 0;
    await mapSettledLimit(due, maxParallel, async (record) => {
      signal?.throwIfAborted();
      const fields = { pod: podKey(record), uid: record.uid, node: record.node };
      let forgotten = false;
      try {
        // Forgotten first, on condition that nobody changed it or handed it off to pod-sync
        // since the index was read: else the next round sees the new record. Should the force
        // delete then fail or never be sent, the reconciler finds the terminating pod without
        // a record and deletes it.
        try {
          await knownPods.delete(record, now);
          forgotten = true;
        } catch (err) {
          if (!(err instanceof KnownPodConflictError)) throw err;
          return;
        }
        const result = await forceDeletePod(core, record);
        handled++;
        log.info(
          { ...fields, result, forceDeleteAt: record.forceDeleteAt },
          'grace period over: force-deleted pod',
        );
      } catch (err) {
        if (signal?.aborted) return;
        const next = forgotten ? 'the reconciler deletes the pod' : 'retrying next round';
        log.warn({ ...fields, err }, `force delete failed; ${next}`);
      }
    });
    return handled;
  }
}

function knownPodRef(record: KnownPod): string {
  return `${record.node}#${podKey(record)}#${record.uid}`;
}
