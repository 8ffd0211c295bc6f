import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import { isNotFound } from '../../kube/client.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { podKey } from '../../kube/pod-key.ts';
import type { Logger } from '../../log/logger.ts';
import {
  isClaimLive,
  type KnownPod,
  KnownPodConflictError,
  type KnownPodIdentity,
  type KnownPodStore,
} from '../known/known-pods.ts';
import { podRef, writePodStatus } from '../status/pod-status-writes.ts';
import { readinessGatesStale, withReadinessGates } from '../status/readiness-gates.ts';
import type { PodApplier } from './pod-applier.ts';
import type { PodDeleter } from './pod-deleter.ts';
import {
  decideFromRecords,
  decideGone,
  decideSync,
  type SyncHint,
  type SyncState,
  type SyncStep,
  stepName,
} from './pod-sync-decision.ts';
import { PodSyncRetryError, type SyncOutcome, type SyncResult } from './pod-sync-result.ts';

/**
 * A level-triggered reconcile of one pod key (virtual-kubelet's
 * node/podcontroller.go syncHandler): it reads the key's known-pod records,
 * then the pod, takes the one step decideSync chooses, and reads again until
 * a step ends the reconcile. What it does is decided by the state it reads;
 * the event that woke it only says what need not be read (below).
 *
 * ## Exactly one provider call per change
 *
 * EventBridge delivers at least once, unordered, possibly concurrently. The
 * record is the serialisation point, with this protocol:
 *
 * - Read the record *before* the pod (a GET without resourceVersion, i.e. a
 *   quorum read). Whoever wrote the record after our read makes our
 *   version-conditional write fail; whoever wrote it before read a pod no
 *   newer than ours. So a successful conditional write always acts on the
 *   newest pod anyone has acted on.
 * - Before calling createPod/updatePod, take a *claim*: a write conditional
 *   on the version read (or on there being no record) that stores a unique
 *   token, the hash being applied and an expiry (SVK_POD_CLAIM_SECONDS). Of
 *   concurrent deliveries exactly one wins; the losers re-read.
 * - Anyone who finds a live claim of another invocation waits until it is
 *   completed, released or expired, then reconciles again from the top. It
 *   would otherwise risk racing the claimant with an older or newer pod, or
 *   deleting in the provider under a create still in flight.
 * - After the provider call succeeds, complete the claim: store appliedHash
 *   and drop the claim, conditional on the token. A duplicate then finds the
 *   hash applied and skips. On failure the claim is released.
 * - A claimant that crashed leaves a claim that expires; the next delivery
 *   (Lambda's retry of the crashed one, or any later one) takes it over with
 *   a version-conditional write and calls the provider again. Only then can
 *   the provider see a second create for one pod, and createPod is
 *   idempotent by uid, so nothing starts twice.
 * - Deletes need no claim (deletePod may be called many times, and is
 *   uid-checked) but wait for live claims and are followed by a conditional
 *   write (forget, forceDeleteAt): if that write loses, we reconcile again,
 *   so a create that landed after our delete is deleted in turn.
 *
 * A record-write conflict re-runs the reconcile from the top (a few times,
 * then a retryable error); so does a lost claim.
 *
 * ## What the event saves (SyncHint)
 *
 * - Its node: only that node's record is read. A pod's node never changes,
 *   and a pod of the same name on another of our nodes is reconciled by that
 *   node's events (and the cluster reconciler reads all nodes).
 * - ADDED: the pod is read first and a create claims on "no record". This is
 *   the protocol's create claim without the record read: a record written
 *   before the claim makes it fail (and the reconcile then reads in order);
 *   one written and forgotten again before it would pass the same condition
 *   after a record read that found nothing, so nothing is weaker.
 * - DELETED, GONE: that uid is gone for good (the API server never brings a
 *   uid back), so the pod is not read: only the uid's record (waited for
 *   while claimed, else forgotten with its provider pod) and its provider pod
 *   are dealt with. A record of another uid is a newer pod's and stays.
 * - pod-watch's hints (POD_EVENT_HINTS): `unchanged` and `deleted-next` need
 *   nothing (the previous event's reconcile, retried until it succeeds, or
 *   the DELETED event covers them); `not-running` force-deletes by uid at
 *   once and leaves the record to the DELETED event, which also deletes a
 *   provider pod a create still in flight may leave.
 *
 * Besides, a record saying the provider deleted the pod and its terminated
 * status was written (decideFromRecords) decides the force delete without
 * reading the pod.
 */

export interface PodReconcilerOptions {
  core: CoreApi;
  knownPods: KnownPodStore;
  /** Our virtual nodes: records are read on each of them. */
  nodes: readonly string[];
  clock: Clock;
  log: Logger;
  /** Monotonic time after which waiting for another invocation's claim gives up with a retryable error. */
  waitUntil: number;
  /** How long a claim lasts: a claim watched unchanged this long is taken over, whatever the wall clocks say. */
  claimMs: number;
  signal?: AbortSignal;
  /** Executes the apply step (createPod/updatePod under a claim). */
  applier: PodApplier;
  /** Executes the deleting steps. */
  deleter: PodDeleter;
}

/** Conflicts tolerated before giving up with a retryable error. */
const MAX_RESTARTS = 5;
/** Steps of one reconcile; a healthy one takes at most four (wait, forget-stale, wait, apply). */
const MAX_STEPS = 20;
const WAIT_POLL_MIN_MS = 50;
const WAIT_POLL_MAX_MS = 1_000;

/** Where a reconcile is: its key, its nodes, what its event says, and the steps so far. */
interface Run {
  key: string;
  namespace: string;
  name: string;
  nodes: readonly string[];
  hint?: SyncHint;
  /** The uid the event says is gone for good (DELETED, GONE). */
  gone?: KnownPodIdentity;
  steps: string[];
  ownTokens: Set<string>;
  /** Others' claims watched unchanged for a whole claim (DecideContext.outlived). */
  outlived: Set<string>;
}

/** Reconciles pod keys; one instance per invocation. */
export class PodReconciler {
  constructor(private readonly options: PodReconcilerOptions) {}

  /**
   * Reconciles one pod key. `hint`: what the event that woke this reconcile
   * says (pod-sync passes it; the cluster reconciler does not): the
   * reconcile then looks at that node only, and takes the shortcuts the
   * event allows (see SyncHint and POD_EVENT_HINTS).
   */
  async reconcile(namespace: string, name: string, hint?: SyncHint): Promise<SyncResult> {
    const key = podKey({ namespace, name });
    const run: Run = {
      key,
      namespace,
      name,
      nodes: hint ? this.options.nodes.filter((n) => n === hint.node) : this.options.nodes,
      ...(hint ? { hint } : {}),
      ...(hint && (hint.type === 'DELETED' || hint.type === 'GONE')
        ? { gone: { node: hint.node, namespace, name, uid: hint.uid } }
        : {}),
      steps: [],
      ownTokens: new Set(),
      outlived: new Set(),
    };
    return (await this.shortcut(run)) ?? this.loop(run);
  }

  /** What the event alone decides, without reading anything; undefined: reconcile. */
  private async shortcut(run: Run): Promise<SyncResult | undefined> {
    const { hint, key, steps } = run;
    if (!hint) return undefined;
    const log = this.options.log.child({ pod: key, uid: hint.uid, node: hint.node });
    const done = (outcome: SyncOutcome): SyncResult => {
      log.debug({ outcome, steps, hints: hint.seen }, `pod sync: ${outcome}`);
      return { key, outcome, steps };
    };
    if (hint.seen.includes('unchanged') || hint.seen.includes('deleted-next')) {
      steps.push(`hint:${hint.seen.includes('unchanged') ? 'unchanged' : 'deleted-next'}`);
      return done('skipped-hinted');
    }
    if (run.nodes.length === 0) {
      steps.push('ignore');
      return done('not-ours');
    }
    if (hint.seen.includes('not-running') && !run.gone) {
      steps.push('hint:not-running');
      const pod = { node: hint.node, namespace: run.namespace, name: run.name, uid: hint.uid };
      return done(await this.options.deleter.forceDeleteKnown({ kind: 'force-delete-known', pod }, log));
    }
    return undefined;
  }

  private async loop(run: Run): Promise<SyncResult> {
    const { key, steps } = run;
    const { signal } = this.options;
    let restarts = 0;
    // A new pod's create claims a record that does not exist yet, so its first read is the pod's alone.
    let podFirst = run.hint?.type === 'ADDED';
    while (steps.length < MAX_STEPS) {
      signal?.throwIfAborted();
      const { state, step } = await this.next(run, podFirst);
      podFirst = false;
      steps.push(stepName(step));
      const log = this.podLog(key, state, step, run.hint);
      try {
        const outcome = await this.execute(step, state, log, run);
        // The uid is gone for good: once its record is forgotten there is nothing left to read.
        const finished = outcome ?? (run.gone && step.kind === 'forget-stale' ? 'absent' : undefined);
        if (finished) {
          const quiet = finished.startsWith('skipped') || finished === 'not-ours' || finished === 'absent';
          log[quiet ? 'debug' : 'info']({ outcome: finished, steps }, `pod sync: ${finished}`);
          return { key, outcome: finished, steps };
        }
      } catch (err) {
        if (!(err instanceof KnownPodConflictError)) throw err;
        restarts++;
        log.debug({ err, restarts }, 'known-pod record changed concurrently: reconciling again');
        if (restarts > MAX_RESTARTS) {
          throw new PodSyncRetryError(`${key}: record kept changing concurrently`, 'conflict', {
            cause: err,
          });
        }
      }
    }
    throw new PodSyncRetryError(`${key}: no stable state after ${steps.join(', ')}`, 'conflict');
  }

  /**
   * The state and the next step: the records first, then the pod (see the
   * protocol above), unless the records (or a gone uid) decide alone. With
   * `podFirst` the pod is read alone first, and only a create is decided on
   * it: its claim is conditional on there being no record, so a record that
   * exists after all makes it fail and the reconcile reads in order.
   */
  private async next(run: Run, podFirst: boolean): Promise<{ state: SyncState; step: SyncStep }> {
    const { namespace, name, nodes } = run;
    // Without an event (the cluster reconciler), a force delete handed off to an event is left to it.
    const ctx = {
      nodes,
      now: this.options.clock.now(),
      ownTokens: run.ownTokens,
      outlived: run.outlived,
      leaveHandedOff: !run.hint,
    };
    if (podFirst) {
      const state: SyncState = { namespace, name, records: [], ...(await this.readPod(namespace, name)) };
      const step = decideSync(state, ctx);
      if (step.kind === 'apply' && step.mode === 'create') return { state, step };
    }
    const records = await this.readRecords(nodes, namespace, name);
    const early = run.gone ? decideGone(run.gone, records, ctx) : decideFromRecords(records, ctx);
    if (early) return { state: { namespace, name, records }, step: early };
    const state: SyncState = { namespace, name, records, ...(await this.readPod(namespace, name)) };
    return { state, step: decideSync(state, ctx) };
  }

  private async readRecords(nodes: readonly string[], namespace: string, name: string): Promise<KnownPod[]> {
    const { knownPods } = this.options;
    return (await Promise.all(nodes.map((n) => knownPods.get(n, namespace, name)))).filter(
      (r): r is KnownPod => r !== undefined,
    );
  }

  /** The pod, or nothing when the API server has none of this name. */
  private async readPod(namespace: string, name: string): Promise<{ pod?: V1Pod }> {
    try {
      return { pod: await this.options.core.readNamespacedPod({ namespace, name }) };
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return {};
    }
  }

  private podLog(key: string, state: SyncState, step: SyncStep, hint?: SyncHint): Logger {
    const subject = 'record' in step && step.record ? step.record : undefined;
    const uid = state.pod?.metadata?.uid ?? subject?.uid ?? state.records[0]?.uid ?? hint?.uid;
    const node = state.pod?.spec?.nodeName ?? subject?.node ?? state.records[0]?.node ?? hint?.node;
    return this.options.log.child({ pod: key, uid, node });
  }

  /** Runs one step: an outcome ends the reconcile, undefined reads again. */
  private async execute(
    step: SyncStep,
    state: SyncState,
    log: Logger,
    run: Pick<Run, 'ownTokens' | 'outlived'>,
  ): Promise<SyncOutcome | undefined> {
    const { applier, deleter } = this.options;
    switch (step.kind) {
      case 'wait':
        await this.waitForClaim(step.record, log, run.outlived);
        return undefined;
      case 'forget-stale':
        await deleter.forgetStale(step.record, log);
        return undefined;
      case 'delete-orphan':
        return deleter.deleteOrphan(state, log);
      case 'ignore':
        return 'not-ours';
      case 'skip':
        return step.reason === 'terminal'
          ? 'skipped-terminal'
          : step.reason === 'unchanged'
            ? 'skipped-unchanged'
            : 'skipped-deleting';
      case 'force-delete':
        return deleter.forceDelete(step, log);
      case 'provider-delete':
        return deleter.providerDelete(step, log);
      case 'apply':
        return applier.apply(step, log, run.ownTokens);
      case 'force-delete-known':
        return deleter.forceDeleteKnown(step, log);
      case 'delete-gone':
        return deleter.deleteGone(step, log);
      case 'readiness':
        return this.writeReadiness(step.pod, log);
    }
  }

  /** Writes the pod's status with Ready as its readiness gates call for (a 409 reads and decides again). */
  private async writeReadiness(pod: V1Pod, log: Logger): Promise<SyncOutcome | undefined> {
    const { core, clock } = this.options;
    const written = await writePodStatus(
      core,
      podRef(pod),
      (current) =>
        readinessGatesStale(current) && current.status
          ? withReadinessGates(
              current.status,
              current.spec?.readinessGates,
              current.status.conditions?.find((c) => c.type === 'Ready'),
              clock.now(),
            )
          : undefined,
      { pod },
    );
    log.info({ written }, 'pod sync: Ready written again for its readiness gates');
    return written === 'written' ? 'readiness-written' : undefined;
  }

  /**
   * Polls the record until the claim is gone, changed or expired, or has
   * stayed unchanged for a whole claim since `record` was read (then it is
   * added to `outlived`: its holder, which starts its provider call's
   * timeout of one claim before it writes the claim, has been cut off, so
   * a wall clock behind the holder's does not keep this reconcile waiting
   * longer, nor one ahead let it in sooner); the caller then reads
   * everything again.
   */
  private async waitForClaim(record: KnownPod, log: Logger, outlived: Set<string>): Promise<void> {
    const { knownPods, clock, waitUntil, claimMs, signal } = this.options;
    const watchedUntil = clock.monotonic() + claimMs;
    log.debug(
      { owner: record.claim?.owner, until: record.claim?.until },
      'another invocation holds the pod: waiting',
    );
    let pause = WAIT_POLL_MIN_MS;
    for (;;) {
      const current = await knownPods.get(record.node, record.namespace, record.name);
      if (current?.version !== record.version || !isClaimLive(current.claim, clock.now())) return;
      if (clock.monotonic() >= watchedUntil) {
        log.warn(
          { owner: current.claim.owner, until: current.claim.until },
          'claim unchanged for a whole claim: taking it over',
        );
        outlived.add(current.claim.token);
        return;
      }
      const left = Math.min(waitUntil, watchedUntil) - clock.monotonic();
      if (left <= 0) {
        throw new PodSyncRetryError(
          `${podKey(record)}: still claimed by ${record.claim?.owner} until ${record.claim?.until}`,
          'busy',
        );
      }
      await clock.sleep(Math.min(pause, left), signal);
      pause = Math.min(pause * 2, WAIT_POLL_MAX_MS);
    }
  }
}
