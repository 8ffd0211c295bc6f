import type { V1Pod } from '@kubernetes/client-node';
import type { PodEventDetail, PodEventHint } from '../../events/pod-event.ts';
import { isClaimLive, type KnownPod, type KnownPodIdentity } from '../known/known-pods.ts';
import { podSpecHash } from '../pod-hash.ts';
import { isTerminalPhase, running, TERMINATED_MARK } from '../status/pod-status-builders.ts';
import { readinessGatesStale } from '../status/readiness-gates.ts';

/**
 * The pure decision of a pod reconcile: from the key's known-pod records and
 * its pod, the one next step. pod-sync executes it (PodReconciler) for every
 * event, and the cluster reconciler asks it which pods have something left to
 * do after events were lost.
 */

/** What a reconcile decides from: the key's records on our nodes (read first), then the pod. */
export interface SyncState {
  namespace: string;
  name: string;
  /** Undefined when the API server has no such pod. */
  pod?: V1Pod;
  records: readonly KnownPod[];
}

export interface DecideContext {
  nodes: readonly string[];
  /** Wall-clock epoch ms, to tell live claims from expired ones. */
  now: number;
  /** Claims this reconcile took itself (a failed release must not make it wait for itself). */
  ownTokens?: ReadonlySet<string>;
  /**
   * Claims of others this reconcile watched unchanged for a whole claim on
   * its own monotonic clock: their holders' provider calls were cut off by
   * then, whatever the wall clocks say (PodReconciler.waitForClaim).
   */
  outlived?: ReadonlySet<string>;
  /**
   * The reconcile is not an event's (the cluster reconciler's): a pod whose
   * force delete pod-status handed off to its status write's event
   * (handedOffUntil) is left to that event.
   */
  leaveHandedOff?: boolean;
}

/**
 * What the event that woke a reconcile says: which node's watch saw the pod,
 * its uid, the type of change and what pod-watch saw in it (POD_EVENT_HINTS).
 * A reconcile with a hint looks only at that node's record, and takes the
 * shortcuts the hints allow; one without (the cluster reconciler's) reads
 * the records of all its nodes.
 */
export interface SyncHint {
  type: PodEventDetail['type'];
  node: string;
  uid: string;
  seen: readonly PodEventHint[];
}

/** The one next step for a state; executing it either ends the reconcile or leads to a fresh read. */
export type SyncStep =
  | { kind: 'wait'; record: KnownPod }
  | { kind: 'forget-stale'; record: KnownPod }
  /** A terminating pod known not to run any more: force-deleted by uid without reading it; the record forgotten if given. */
  | { kind: 'force-delete-known'; pod: KnownPodIdentity; record?: KnownPod }
  /** The pod of this uid is gone for good: only its provider pod may be left to delete. */
  | { kind: 'delete-gone'; pod: KnownPodIdentity }
  | { kind: 'delete-orphan' }
  | { kind: 'ignore' }
  | { kind: 'force-delete'; pod: V1Pod; node: string; record?: KnownPod }
  | { kind: 'provider-delete'; pod: V1Pod; node: string; record?: KnownPod; forceDeleteAt: string }
  | { kind: 'skip'; reason: 'terminal' | 'unchanged' | 'deleting' }
  /** A readiness gate's condition changed and the pod's Ready does not follow yet: its status is written again. */
  | { kind: 'readiness'; pod: V1Pod }
  | { kind: 'apply'; mode: 'create' | 'update'; pod: V1Pod; node: string; record?: KnownPod; hash: string };

/**
 * The next step, as virtual-kubelet's node/podcontroller.go (syncHandler and
 * syncPodInProvider) decides it, in this order:
 *
 * 1. a record about another uid (pod gone, or a new pod under the same name):
 *    delete that uid in the provider, forget the record, carry on;
 * 2. pod absent: delete the provider's pod of that name if its pod is gone;
 * 3. pod not bound to one of our nodes: touch nothing;
 * 4. terminating and not running: force-delete it from the API server now;
 * 5. terminating: delete in the provider, record the grace period's end
 *    (pod-status force-deletes it then);
 * 6. Succeeded or Failed: skip;  7. spec/metadata as last applied: skip,
 *    unless a readiness gate's condition changed and Ready must follow;
 * 8. otherwise create (unknown) or update (known) in the provider and record
 *    the hash applied.
 *
 * Whenever the record a step would act on is under another invocation's live
 * claim, the step is to wait for that claim instead.
 */
export function decideSync(state: SyncState, ctx: DecideContext): SyncStep {
  const { pod, records } = state;
  const uid = pod?.metadata?.uid;
  const stale = records.find((r) => r.uid !== uid);
  if (stale)
    return foreignClaim(stale, ctx)
      ? { kind: 'wait', record: stale }
      : { kind: 'forget-stale', record: stale };
  if (!pod) return { kind: 'delete-orphan' };

  const node = pod.spec?.nodeName;
  if (!node || !ctx.nodes.includes(node)) return { kind: 'ignore' };
  const record = records.find((r) => r.node === node);
  if (record && foreignClaim(record, ctx)) return { kind: 'wait', record };
  const withRecord = record ? { record } : {};

  const deletionTimestamp = pod.metadata?.deletionTimestamp;
  if (deletionTimestamp) {
    if (!running(pod.status)) return { kind: 'force-delete', pod, node, ...withRecord };
    // The API server sets deletionTimestamp to the time of the delete call plus the grace period.
    const forceDeleteAt = new Date(deletionTimestamp).toISOString();
    if (record?.forceDeleteAt === forceDeleteAt) return { kind: 'skip', reason: 'deleting' };
    return { kind: 'provider-delete', pod, node, ...withRecord, forceDeleteAt };
  }
  if (isTerminalPhase(pod.status?.phase)) return { kind: 'skip', reason: 'terminal' };
  const hash = podSpecHash(pod);
  if (record?.appliedHash === hash)
    return readinessGatesStale(pod) ? { kind: 'readiness', pod } : { kind: 'skip', reason: 'unchanged' };
  return { kind: 'apply', mode: record?.appliedHash ? 'update' : 'create', pod, node, ...withRecord, hash };
}

/**
 * The step the records alone decide, before the pod is read (undefined: read
 * it): a record saying the provider deleted the pod and pod-status then wrote
 * its terminated status means the pod is terminating and runs no container
 * (nothing of ours writes a status over a Succeeded one), which is when
 * decideSync force-deletes it at once. The delete is guarded by the uid.
 * Left to the event that status write woke while handed off to it, when the
 * reconcile is not an event's (ctx.leaveHandedOff).
 */
export function decideFromRecords(records: readonly KnownPod[], ctx: DecideContext): SyncStep | undefined {
  const done = records.find(
    (r) => r.forceDeleteAt !== undefined && r.statusHash === TERMINATED_MARK && ctx.nodes.includes(r.node),
  );
  if (!done) return undefined;
  if (foreignClaim(done, ctx)) return { kind: 'wait', record: done };
  if (ctx.leaveHandedOff && done.handedOffUntil !== undefined && Date.parse(done.handedOffUntil) > ctx.now)
    return { kind: 'skip', reason: 'deleting' };
  return { kind: 'force-delete-known', pod: done, record: done };
}

/**
 * The next step when the event says its uid is gone for good (DELETED, or
 * GONE after a relist), from that node's record alone: wait for a claim on
 * it (a create in flight), else forget it (deleting its provider pod);
 * without a record of this uid, only its provider pod may be left. A record
 * of another uid belongs to a newer pod of the same name and is left alone.
 */
export function decideGone(
  gone: KnownPodIdentity,
  records: readonly KnownPod[],
  ctx: DecideContext,
): SyncStep {
  const record = records.find((r) => r.uid === gone.uid && r.node === gone.node);
  if (!record) return { kind: 'delete-gone', pod: gone };
  if (foreignClaim(record, ctx)) return { kind: 'wait', record };
  return { kind: 'forget-stale', record };
}

/** Another invocation's claim on the record keeps this reconcile waiting: live, not its own, not watched out. */
function foreignClaim(record: KnownPod, ctx: DecideContext): boolean {
  const { claim } = record;
  if (!isClaimLive(claim, ctx.now)) return false;
  return !(ctx.ownTokens?.has(claim.token) ?? false) && !(ctx.outlived?.has(claim.token) ?? false);
}

/** A step's name in SyncResult.steps, e.g. `apply:create`, `skip:unchanged`, `wait`. */
export function stepName(step: SyncStep): string {
  if (step.kind === 'apply') return `apply:${step.mode}`;
  if (step.kind === 'skip') return `skip:${step.reason}`;
  return step.kind;
}
