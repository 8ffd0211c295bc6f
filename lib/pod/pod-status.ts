import type { CoreV1Api, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import { isConflict, isNotFound } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';
import type { PodProvider } from '../provider/provider.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import {
  isClaimLive,
  type KnownPod,
  KnownPodConflictError,
  type KnownPodIdentity,
  type KnownPodStore,
} from './known-pods.ts';
import { podStatusHash } from './pod-hash.ts';

/**
 * Pod status from the provider to the API server (seed 001's pod status
 * loop; virtual-kubelet's node/sync.go for providers without push), and the
 * force-deletes whose grace period ended. The kubelet owns a pod's status, so
 * a write replaces it whole, keeping only the conditions other actors own.
 */

/** virtual-kubelet's reasons and messages (node/sync.go). */
export const STATUS_REASONS = {
  providerFailed: 'ProviderFailed',
  notFound: 'NotFound',
  notFoundMessage: 'The pod status was not found and may have been deleted from the provider',
  containerNotFoundMessage: 'Container was not found and was likely deleted',
  terminated: 'Terminated',
  containerTerminatedMessage: 'Container was terminated. The exit code may not reflect the real exit code',
} as const;

/** Exit code virtual-kubelet reports for a container the provider lost. */
export const CONTAINER_NOT_FOUND_EXIT_CODE = -137;

/**
 * Conditions the kubelet computes from its containers: a provider that does
 * not report them drops them. Any other type (PodScheduled from the
 * scheduler, readiness gates...) is kept unless the provider reports it.
 */
const KUBELET_CONDITIONS = new Set(['Ready', 'Initialized', 'ContainersReady']);

/**
 * Seed 001's running(): some container is neither terminated nor waiting. No
 * container statuses (never started) counts as not running.
 */
export function running(status: V1PodStatus | undefined): boolean {
  return (status?.containerStatuses ?? []).some((c) => !c.state?.terminated && !c.state?.waiting);
}

export function isTerminalPhase(phase: string | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * The status to write: the provider's, plus the conditions of the current
 * status that neither the provider reports nor the kubelet owns, and the
 * qosClass the API server assigned when the provider says none.
 */
export function mergeStatus(current: V1PodStatus | undefined, reported: V1PodStatus): V1PodStatus {
  const reportedTypes = new Set((reported.conditions ?? []).map((c) => c.type));
  const kept = (current?.conditions ?? []).filter(
    (c) => !reportedTypes.has(c.type) && !KUBELET_CONDITIONS.has(c.type),
  );
  const conditions = [...(reported.conditions ?? []), ...kept];
  const qosClass = reported.qosClass ?? current?.qosClass;
  return {
    ...reported,
    ...(conditions.length > 0 ? { conditions } : {}),
    ...(qosClass ? { qosClass } : {}),
  };
}

/** The API server keeps times in whole seconds. */
function wholeSeconds(epochMs: number): Date {
  return new Date(Math.floor(epochMs / 1000) * 1000);
}

function terminateContainers(
  statuses: V1ContainerStatus[] | undefined,
  terminated: (c: V1ContainerStatus) => NonNullable<NonNullable<V1ContainerStatus['state']>['terminated']>,
  onlyRunning: boolean,
): V1ContainerStatus[] | undefined {
  return statuses?.map((c) =>
    onlyRunning && !c.state?.running
      ? c
      : { ...c, ready: false, started: false, state: { terminated: terminated(c) } },
  );
}

/**
 * virtual-kubelet's status for a pod the provider lost (it had it, it no
 * longer does, and nobody deleted it): Failed/NotFound, running containers
 * terminated with exit code -137. The owning controller then replaces it.
 */
export function lostStatus(current: V1PodStatus | undefined, nowMs: number): V1PodStatus {
  const finishedAt = wholeSeconds(nowMs);
  const containerStatuses = terminateContainers(
    current?.containerStatuses,
    (c) => ({
      exitCode: CONTAINER_NOT_FOUND_EXIT_CODE,
      reason: STATUS_REASONS.notFound,
      message: STATUS_REASONS.containerNotFoundMessage,
      finishedAt,
      ...(c.state?.running?.startedAt ? { startedAt: c.state.running.startedAt } : {}),
      ...(c.containerID ? { containerID: c.containerID } : {}),
    }),
    true,
  );
  return {
    ...current,
    phase: 'Failed',
    reason: STATUS_REASONS.notFound,
    message: STATUS_REASONS.notFoundMessage,
    ...(containerStatuses ? { containerStatuses } : {}),
  };
}

/**
 * virtual-kubelet's status for a pod whose provider delete finished (the
 * provider no longer has it): Succeeded/Terminated, every container
 * terminated. It makes the pod "not running", so it is force-deleted at once.
 */
export function terminatedStatus(current: V1PodStatus | undefined, nowMs: number): V1PodStatus {
  const finishedAt = wholeSeconds(nowMs);
  const containerStatuses = terminateContainers(
    current?.containerStatuses,
    (c) =>
      c.state?.terminated ?? {
        exitCode: 0,
        reason: STATUS_REASONS.terminated,
        message: STATUS_REASONS.containerTerminatedMessage,
        finishedAt,
        ...(c.state?.running?.startedAt ? { startedAt: c.state.running.startedAt } : {}),
        ...(c.containerID ? { containerID: c.containerID } : {}),
      },
    false,
  );
  return {
    ...current,
    phase: 'Succeeded',
    reason: STATUS_REASONS.terminated,
    ...(containerStatuses ? { containerStatuses } : {}),
  };
}

/** seed 001's handleProviderError: reason ProviderFailed, phase Failed when the pod never restarts, else Pending. */
export function providerFailedStatus(pod: V1Pod, message: string): V1PodStatus {
  return {
    ...pod.status,
    phase: pod.spec?.restartPolicy === 'Never' ? 'Failed' : 'Pending',
    reason: STATUS_REASONS.providerFailed,
    message,
  };
}

/** Which pod a status write is for: the uid guards against a new pod with the same name. */
export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

export type StatusWriteResult = 'written' | 'gone' | 'unchanged';

/**
 * Replaces the pod's status with `make(current pod)`, read fresh and written
 * with its resourceVersion, so nothing another writer changed meanwhile is
 * lost (a 409 reads again, up to 3 times). `gone` when the pod no longer
 * exists under this uid; `unchanged` when `make` returns undefined.
 *
 * `options.pod`: the pod as the caller just read it; the first attempt
 * writes against it instead of reading again (its resourceVersion still
 * guards the write, and a 409 reads afresh).
 */
export async function writePodStatus(
  core: CoreV1Api,
  ref: PodRef,
  make: (pod: V1Pod) => V1PodStatus | undefined,
  options: { pod?: V1Pod } = {},
): Promise<StatusWriteResult> {
  let known = options.pod?.metadata?.uid === ref.uid ? options.pod : undefined;
  for (let attempt = 1; ; attempt++) {
    let pod: V1Pod;
    if (known) {
      pod = known;
      known = undefined;
    } else {
      try {
        pod = await core.readNamespacedPod({ namespace: ref.namespace, name: ref.name });
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw err;
      }
    }
    if (pod.metadata?.uid !== ref.uid) return 'gone';
    const status = make(pod);
    if (!status) return 'unchanged';
    try {
      await core.replaceNamespacedPodStatus({
        namespace: ref.namespace,
        name: ref.name,
        body: { ...pod, status },
      });
      return 'written';
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      if (!isConflict(err) || attempt >= 3) throw err;
    }
  }
}

/** Where statuses are written and what was written is recorded. */
export interface StatusTargets {
  core: CoreV1Api;
  knownPods: KnownPodStore;
}

/** The record a status write is for: the pod's identity and the status hash the writer decided from. */
export type StatusRecord = KnownPodIdentity & Pick<KnownPod, 'statusHash'>;

/**
 * Writes `make(current pod)` as the pod's status (writePodStatus) and
 * records `hash` as written for this uid, as a compare-and-set on the hash
 * `record` says was written before. The API server cannot tell us whose
 * write landed last when two writers raced, so when the compare-and-set
 * fails the hash is forgotten instead: the next poll writes the provider's
 * status again (one redundant write, never a lost one). A terminal status
 * (`make` returns undefined) is recorded too, so it is not tried again.
 */
export async function writeRecordedStatus(
  targets: StatusTargets,
  record: StatusRecord,
  hash: string,
  make: (pod: V1Pod) => V1PodStatus | undefined,
  options: { pod?: V1Pod } = {},
): Promise<StatusWriteResult> {
  const { core, knownPods } = targets;
  const written = await writePodStatus(core, record, make, options);
  // Gone: pod-sync forgets the record; nothing to remember here.
  if (written === 'gone') return 'gone';
  try {
    await knownPods.recordStatus(record, record.statusHash, hash);
  } catch (err) {
    if (!(err instanceof KnownPodConflictError)) throw err;
    try {
      await knownPods.forgetStatus(record);
    } catch (e) {
      // The record is gone or about another pod: nothing to remember either.
      if (!(e instanceof KnownPodConflictError)) throw e;
    }
  }
  return written;
}

/**
 * What the provider reported for a pod, if it is not what the record says
 * was last written: the status and its hash. The one test of "changed"
 * shared by pod-status's poll and pod-sync's push.
 */
export function reportedStatusToWrite(
  record: Pick<KnownPod, 'statusHash'>,
  reported: V1PodStatus | undefined,
): { status: V1PodStatus; hash: string } | undefined {
  if (!reported) return undefined;
  const hash = podStatusHash(reported);
  return hash === record.statusHash ? undefined : { status: reported, hash };
}

/**
 * The one path by which a status the provider reported reaches the API
 * server, for pod-status's poll and pod-sync's push alike: skipped when the
 * record says it was written already, else merged with the conditions other
 * actors own (never over a Succeeded or Failed status) and recorded.
 */
export async function writeReportedStatus(
  targets: StatusTargets,
  record: StatusRecord,
  reported: V1PodStatus | undefined,
  options: { pod?: V1Pod } = {},
): Promise<StatusWriteResult> {
  const change = reportedStatusToWrite(record, reported);
  if (!change) return 'unchanged';
  return writeRecordedStatus(
    targets,
    record,
    change.hash,
    (pod) => (isTerminalPhase(pod.status?.phase) ? undefined : mergeStatus(pod.status, change.status)),
    options,
  );
}

/**
 * Deletes the pod from the API server at once (grace 0) if it still has this
 * uid. `gone` when it was already gone or is another pod now (the UID
 * precondition failed).
 */
export async function forceDeletePod(core: CoreV1Api, ref: PodRef): Promise<'deleted' | 'gone'> {
  try {
    await core.deleteNamespacedPod({
      namespace: ref.namespace,
      name: ref.name,
      gracePeriodSeconds: 0,
      body: { gracePeriodSeconds: 0, preconditions: { uid: ref.uid } },
    });
    return 'deleted';
  } catch (err) {
    if (isNotFound(err) || isConflict(err)) return 'gone';
    throw err;
  }
}

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
 * next round writes it if pod-sync did not. Nor,
 * when the provider's list lacks it, before anything was applied or deleted
 * in the provider (never created: nothing to report, nothing lost).
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
    const listed = new Map(
      (await provider.listPods(node, signal)).map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p]),
    );
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
      const inList = listed.get(`${record.namespace}/${record.name}`);
      return this.syncPod(record, inList?.metadata?.uid === record.uid ? inList : undefined, signal);
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
        log.warn(
          { err: s.reason, pod: r && `${r.namespace}/${r.name}`, uid: r?.uid, node },
          'pod status sync failed',
        );
      }
    });
    return result;
  }

  private async syncPod(
    record: KnownPod,
    listed: V1Pod | undefined,
    signal?: AbortSignal,
  ): Promise<PodOutcome> {
    const { provider, clock } = this.options;
    if (!shouldPollStatus(record, listed !== undefined, clock.now())) return 'none';
    let reported = listed;
    if (!reported) {
      const got = await provider.getPod(record.namespace, record.name, signal);
      reported = got?.metadata?.uid === record.uid ? got : undefined;
    }
    if (reported) {
      const written = await writeReportedStatus(this.options, record, reported.status ?? {});
      if (written === 'written') this.logWritten(record, 'written');
      return written;
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
    if (written !== 'written') return written;
    this.logWritten(record, outcome);
    return outcome;
  }

  private logWritten(record: KnownPod, outcome: PodOutcome): void {
    const logFields = { pod: `${record.namespace}/${record.name}`, uid: record.uid, node: record.node };
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
      const fields = { pod: `${record.namespace}/${record.name}`, uid: record.uid, node: record.node };
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

/** statusHash values for the statuses we derive ourselves rather than copy from the provider. */
const TERMINATED_MARK = 'terminated';
const LOST_MARK = 'lost';
