import type { CoreV1Api } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import { isNotFound } from '../kube/client.ts';
import { podKey } from '../kube/pod-key.ts';
import type { Logger } from '../log/logger.ts';
import { isClaimLive, type KnownPod, KnownPodConflictError, type KnownPodStore } from './known-pods.ts';
import type { PodApplier } from './pod-applier.ts';
import type { PodDeleter } from './pod-deleter.ts';
import { decideSync, type SyncState, type SyncStep, stepName } from './pod-sync-decision.ts';
import { PodSyncRetryError, type SyncOutcome, type SyncResult } from './pod-sync-result.ts';

/**
 * A level-triggered reconcile of one pod key (virtual-kubelet's
 * node/podcontroller.go syncHandler): it never looks at which event woke it;
 * it reads the key's known-pod records, then the pod, takes the one step
 * decideSync chooses, and reads again until a step ends the reconcile.
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
 */

export interface PodReconcilerOptions {
  core: CoreV1Api;
  knownPods: KnownPodStore;
  /** Our virtual nodes: records are read on each of them. */
  nodes: readonly string[];
  clock: Clock;
  log: Logger;
  /** Monotonic time after which waiting for another invocation's claim gives up with a retryable error. */
  waitUntil: number;
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

/** Reconciles pod keys; one instance per invocation. */
export class PodReconciler {
  constructor(private readonly options: PodReconcilerOptions) {}

  async reconcile(namespace: string, name: string): Promise<SyncResult> {
    const { clock, nodes, signal } = this.options;
    const key = podKey({ namespace, name });
    const steps: string[] = [];
    const ownTokens = new Set<string>();
    let restarts = 0;
    while (steps.length < MAX_STEPS) {
      signal?.throwIfAborted();
      const state = await this.read(namespace, name);
      const step = decideSync(state, { nodes, now: clock.now(), ownTokens });
      steps.push(stepName(step));
      const log = this.podLog(key, state, step);
      try {
        const outcome = await this.execute(step, state, log, ownTokens);
        if (outcome) {
          const quiet = outcome.startsWith('skipped') || outcome === 'not-ours' || outcome === 'absent';
          log[quiet ? 'debug' : 'info']({ outcome, steps }, `pod sync: ${outcome}`);
          return { key, outcome, steps };
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

  /** The records first, then the pod: see the protocol above. */
  private async read(namespace: string, name: string): Promise<SyncState> {
    const { knownPods, nodes, core } = this.options;
    const records = (await Promise.all(nodes.map((n) => knownPods.get(n, namespace, name)))).filter(
      (r): r is KnownPod => r !== undefined,
    );
    try {
      const pod = await core.readNamespacedPod({ namespace, name });
      return { namespace, name, pod, records };
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return { namespace, name, records };
    }
  }

  private podLog(key: string, state: SyncState, step: SyncStep): Logger {
    const subject = 'record' in step && step.record ? step.record : undefined;
    const uid = state.pod?.metadata?.uid ?? subject?.uid ?? state.records[0]?.uid;
    const node = state.pod?.spec?.nodeName ?? subject?.node ?? state.records[0]?.node;
    return this.options.log.child({ pod: key, uid, node });
  }

  /** Runs one step: an outcome ends the reconcile, undefined reads again. */
  private async execute(
    step: SyncStep,
    state: SyncState,
    log: Logger,
    ownTokens: Set<string>,
  ): Promise<SyncOutcome | undefined> {
    const { applier, deleter } = this.options;
    switch (step.kind) {
      case 'wait':
        await this.waitForClaim(step.record, log);
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
        return applier.apply(step, log, ownTokens);
    }
  }

  /** Polls the record until the claim is gone, changed or expired; the caller then reads everything again. */
  private async waitForClaim(record: KnownPod, log: Logger): Promise<void> {
    const { knownPods, clock, waitUntil, signal } = this.options;
    log.debug(
      { owner: record.claim?.owner, until: record.claim?.until },
      'another invocation holds the pod: waiting',
    );
    let pause = WAIT_POLL_MIN_MS;
    for (;;) {
      const current = await knownPods.get(record.node, record.namespace, record.name);
      if (current?.version !== record.version || !isClaimLive(current.claim, clock.now())) return;
      const left = waitUntil - clock.monotonic();
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
