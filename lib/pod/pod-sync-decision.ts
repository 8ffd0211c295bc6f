import type { V1Pod } from '@kubernetes/client-node';
import { isClaimLive, type KnownPod } from './known-pods.ts';
import { podSpecHash } from './pod-hash.ts';
import { isTerminalPhase, running } from './pod-status-builders.ts';

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
}

/** The one next step for a state; executing it either ends the reconcile or leads to a fresh read. */
export type SyncStep =
  | { kind: 'wait'; record: KnownPod }
  | { kind: 'forget-stale'; record: KnownPod }
  | { kind: 'delete-orphan' }
  | { kind: 'ignore' }
  | { kind: 'force-delete'; pod: V1Pod; node: string; record?: KnownPod }
  | { kind: 'provider-delete'; pod: V1Pod; node: string; record?: KnownPod; forceDeleteAt: string }
  | { kind: 'skip'; reason: 'terminal' | 'unchanged' | 'deleting' }
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
 * 6. Succeeded or Failed: skip;  7. spec/metadata as last applied: skip;
 * 8. otherwise create (unknown) or update (known) in the provider and record
 *    the hash applied.
 *
 * Whenever the record a step would act on is under another invocation's live
 * claim, the step is to wait for that claim instead.
 */
export function decideSync(state: SyncState, ctx: DecideContext): SyncStep {
  const { pod, records } = state;
  const uid = pod?.metadata?.uid;
  const foreignClaim = (r: KnownPod) =>
    isClaimLive(r.claim, ctx.now) && !(ctx.ownTokens?.has(r.claim.token) ?? false);

  const stale = records.find((r) => r.uid !== uid);
  if (stale)
    return foreignClaim(stale) ? { kind: 'wait', record: stale } : { kind: 'forget-stale', record: stale };
  if (!pod) return { kind: 'delete-orphan' };

  const node = pod.spec?.nodeName;
  if (!node || !ctx.nodes.includes(node)) return { kind: 'ignore' };
  const record = records.find((r) => r.node === node);
  if (record && foreignClaim(record)) return { kind: 'wait', record };
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
  if (record?.appliedHash === hash) return { kind: 'skip', reason: 'unchanged' };
  return { kind: 'apply', mode: record?.appliedHash ? 'update' : 'create', pod, node, ...withRecord, hash };
}

/** A step's name in SyncResult.steps, e.g. `apply:create`, `skip:unchanged`, `wait`. */
export function stepName(step: SyncStep): string {
  if (step.kind === 'apply') return `apply:${step.mode}`;
  if (step.kind === 'skip') return `skip:${step.reason}`;
  return step.kind;
}
