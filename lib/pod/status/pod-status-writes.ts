import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../kube/client.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { PatchStrategy, setHeaderOptions } from '../../kube/patch.ts';
import {
  type KnownPod,
  KnownPodConflictError,
  type KnownPodIdentity,
  type KnownPodStore,
} from '../known/known-pods.ts';
import { isTerminalPhase, mergeStatus, reportedStatusToWrite } from './pod-status-builders.ts';
import { isOlderReading, stampReadAt } from './status-order.ts';
import { podStatusPatch } from './status-patch.ts';

/**
 * Writes to the API server on a pod's behalf: its status (guarded by its uid
 * and resourceVersion, and recorded in its known-pod record so that it is
 * written once) and its force delete.
 */

/** Which pod a status write is for: the uid guards against a new pod with the same name. */
export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** `stale`: the pod carries a status from a newer provider reading (status-order.ts); nothing was written. */
export type StatusWriteResult = 'written' | 'gone' | 'unchanged' | 'stale';

/** What a status maker returns for a status read before the one the pod carries. */
export const OLDER_READING = Symbol('older provider reading');

/** The status to write over a pod's current one: undefined for none, OLDER_READING for none because it is outdated. */
export type StatusMaker = (pod: V1Pod) => V1PodStatus | undefined | typeof OLDER_READING;

/** The ref of a pod as read from the API server. */
export function podRef(pod: V1Pod): PodRef {
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
  };
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Sets the pod's status to `make(current pod)`, read fresh and written as a
 * merge patch from the status read (status-patch.ts: a field neither names
 * stays as the API server has it),
 * guarded by the pod's uid and resourceVersion, so nothing another writer
 * changed meanwhile is lost (a 409 reads again, up to 3 times, and asks
 * `make` again about what it read). `gone` when the pod no longer exists under this uid;
 * `unchanged` when `make` returns undefined, `stale` when it returns
 * OLDER_READING.
 *
 * `options.pod`: the pod as the caller just read it; the first attempt
 * writes against it instead of reading again (its resourceVersion still
 * guards the write, and a 409 reads afresh).
 */
export async function writePodStatus(
  core: CoreApi,
  ref: PodRef,
  make: StatusMaker,
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
    if (status === OLDER_READING) return 'stale';
    if (!status) return 'unchanged';
    try {
      const guard = { uid: ref.uid, resourceVersion: pod.metadata?.resourceVersion };
      await core.patchNamespacedPodStatus(
        { namespace: ref.namespace, name: ref.name, body: podStatusPatch(pod.status, status, guard) },
        MERGE_PATCH,
      );
      return 'written';
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      if (!isConflict(err) || attempt >= 3) throw err;
    }
  }
}

/** Where statuses are written and what was written is recorded. */
export interface StatusTargets {
  core: CoreApi;
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
 * (`make` returns undefined) is recorded too, so it is not tried again; a
 * stale one is not: the record keeps naming what the newer writer wrote.
 */
export async function writeRecordedStatus(
  targets: StatusTargets,
  record: StatusRecord,
  hash: string,
  make: StatusMaker,
  options: { pod?: V1Pod; handOff?: { forceDeleteAt: string; until: string } } = {},
): Promise<StatusWriteResult> {
  const { core, knownPods } = targets;
  const written = await writePodStatus(core, record, make, options.pod ? { pod: options.pod } : {});
  // Gone: pod-sync forgets the record; nothing to remember here.
  if (written === 'gone' || written === 'stale') return written;
  try {
    await knownPods.recordStatus(record, record.statusHash, hash, options.handOff);
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

/** When the provider reading a status comes from began (epoch ms; status-order.ts). */
export interface ReadAt {
  readAtMs: number;
}

/**
 * A status the provider reported, as it is written: merged with the
 * conditions other actors own and stamped with when its reading began; never
 * over a finished pod, nor over a status from a newer reading.
 */
export function providerStatusOver(reported: V1PodStatus, { readAtMs }: ReadAt): StatusMaker {
  return (pod) => {
    if (isTerminalPhase(pod.status?.phase)) return undefined;
    if (isOlderReading(pod.status, readAtMs)) return OLDER_READING;
    const gates = { readinessGates: pod.spec?.readinessGates, nowMs: readAtMs };
    return stampReadAt(mergeStatus(pod.status, reported, gates), readAtMs);
  };
}

/**
 * Writes a status the provider reported (writePodStatus with the merge of
 * pod-status's poll) without recording it: for a writer that records the
 * hash itself, as pod-sync does when it completes its claim.
 */
export function writeProviderStatus(
  core: CoreApi,
  ref: PodRef,
  reported: V1PodStatus,
  options: ReadAt & { pod?: V1Pod },
): Promise<StatusWriteResult> {
  return writePodStatus(core, ref, providerStatusOver(reported, options), options);
}

/**
 * The path by which pod-status's poll brings a status the provider reported
 * to the API server: skipped when the record says it was written already,
 * else merged with the conditions other actors own (never over a Succeeded
 * or Failed status) and recorded.
 */
export async function writeReportedStatus(
  targets: StatusTargets,
  record: StatusRecord,
  reported: V1PodStatus | undefined,
  options: ReadAt & { pod?: V1Pod },
): Promise<StatusWriteResult> {
  const change = reportedStatusToWrite(record, reported);
  if (!change) return 'unchanged';
  return writeRecordedStatus(
    targets,
    record,
    change.hash,
    providerStatusOver(change.status, options),
    options,
  );
}

/**
 * Deletes the pod from the API server at once (grace 0) if it still has this
 * uid. `gone` when it was already gone or is another pod now (the UID
 * precondition failed).
 */
export async function forceDeletePod(core: CoreApi, ref: PodRef): Promise<'deleted' | 'gone'> {
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
