import { randomUUID } from 'node:crypto';
import type { CoreV1Api, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Dependencies } from '../app/dependencies.ts';
import type { Clock } from '../clock.ts';
import { type PodEventDetail, parsePodEvent, podKey } from '../events/pod-event.ts';
import type { Invocation } from '../invocation.ts';
import { isNotFound } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';
import { type AppliedPodStatus, isProviderNotFound, type PodProvider } from '../provider/provider.ts';
import {
  isClaimLive,
  type KnownPod,
  KnownPodConflictError,
  type KnownPodIdentity,
  KnownPodStore,
} from './known-pods.ts';
import {
  type EnvOptions,
  EnvResolveError,
  type EnvSources,
  kubeEnvSources,
  resolvePodEnv,
} from './pod-env.ts';
import { KubePodEventRecorder, POD_EVENT_REASONS, type PodEventRecorder } from './pod-events.ts';
import { podSpecHash } from './pod-hash.ts';
import {
  forceDeletePod,
  isTerminalPhase,
  providerFailedStatus,
  reportedStatusToWrite,
  running,
  writePodStatus,
  writeReportedStatus,
} from './pod-status.ts';

/**
 * pod-sync: a level-triggered reconcile of one pod key (seed 001's
 * syncHandler and syncPodInProvider). It never looks at which event woke it:
 * it reads the known-pod records of the key, then the pod, and applies
 * SPEC.md "Pods" in order:
 *
 * 1. a record about another uid (pod gone, or a new pod under the same name):
 *    delete that uid in the provider, forget the record, carry on;
 * 2. pod absent: delete the provider's pod of that name if its pod is gone;
 * 3. pod not bound to one of our nodes: touch nothing;
 * 4. terminating and not running: force-delete it from the API server now;
 * 5. terminating: delete in the provider, record the grace period's end
 *    (pod-status force-deletes it then);
 * 6. Succeeded or Failed: skip;  7. spec/metadata as last applied: skip;
 * 8. otherwise resolve env, then create (unknown) or update (known) in the
 *    provider and record the hash applied.
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
 * ## The first status (status at once)
 *
 * When the provider resolves createPod/updatePod with the pod's status, the
 * claim is completed with a `pushUntil` mark and the status is then written
 * through pod-status's write path (writeReportedStatus), which records its
 * hash and drops the mark. pod-status leaves marked (and claimed) pods alone,
 * so the status is written once; the delivery our own status write triggers
 * finds the claim gone and skips at once. A failed write is logged and drops
 * the mark, and pod-status's poll writes the status: it never fails the
 * reconcile, whose provider call is done and recorded.
 */

/** Where a reconcile ended. */
export type SyncOutcome =
  | 'created'
  | 'updated'
  | 'create-failed'
  | 'deleted-in-provider'
  | 'force-deleted'
  | 'orphan-deleted'
  | 'absent'
  | 'not-ours'
  | 'skipped-terminal'
  | 'skipped-unchanged'
  | 'skipped-deleting';

/** What one reconcile did, for logs, metrics and tests. */
export interface SyncResult {
  key: string;
  outcome: SyncOutcome;
  /** The steps taken, in order, e.g. `['wait', 'apply:create']`. */
  steps: string[];
}

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

/** The pure decision of a reconcile: SPEC.md "Pods" in order, plus waiting for others' claims. */
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

function stepName(step: SyncStep): string {
  if (step.kind === 'apply') return `apply:${step.mode}`;
  if (step.kind === 'skip') return `skip:${step.reason}`;
  return step.kind;
}

/** The pod could not be reconciled now; the event is retried and the reconcile then starts over. */
export class PodSyncRetryError extends Error {
  override readonly name = 'PodSyncRetryError';
  constructor(
    message: string,
    /** env: a referenced ConfigMap/Secret is missing; provider: the provider call failed; busy: another invocation's claim outlasted ours; conflict: too many concurrent writers. */
    readonly reason: 'env' | 'provider' | 'busy' | 'conflict',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface PodReconcilerOptions {
  core: CoreV1Api;
  provider: PodProvider;
  knownPods: KnownPodStore;
  events: PodEventRecorder;
  envSources: EnvSources;
  /** Our virtual nodes: only pods bound to one of them are touched. */
  nodes: readonly string[];
  clock: Clock;
  log: Logger;
  /** Who claims (the request id), for logs. */
  owner: string;
  /** How long a claim keeps others waiting, and the longest provider call. */
  claimMs: number;
  /** Monotonic time after which waiting for another invocation's claim gives up with a retryable error. */
  waitUntil: number;
  env?: EnvOptions;
  signal?: AbortSignal;
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
    switch (step.kind) {
      case 'wait':
        await this.waitForClaim(step.record, log);
        return undefined;
      case 'forget-stale':
        await this.deleteUidInProvider(step.record);
        await this.options.knownPods.delete(step.record);
        log.info({ staleUid: step.record.uid }, 'pod gone or replaced: deleted in provider and forgotten');
        return undefined;
      case 'delete-orphan':
        return this.deleteOrphan(state, log);
      case 'ignore':
        return 'not-ours';
      case 'skip':
        return step.reason === 'terminal'
          ? 'skipped-terminal'
          : step.reason === 'unchanged'
            ? 'skipped-unchanged'
            : 'skipped-deleting';
      case 'force-delete':
        return this.forceDelete(step, log);
      case 'provider-delete':
        return this.providerDelete(step, log);
      case 'apply':
        return this.apply(step, log, ownTokens);
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
          `${record.namespace}/${record.name}: still claimed by ${record.claim?.owner} until ${record.claim?.until}`,
          'busy',
        );
      }
      await clock.sleep(Math.min(pause, left), signal);
      pause = Math.min(pause * 2, WAIT_POLL_MAX_MS);
    }
  }

  /** Deletes the provider's pod of this name if it is the record's uid (never a newer pod's). */
  private async deleteUidInProvider(record: KnownPodIdentity): Promise<void> {
    const { provider, signal } = this.options;
    const current = await provider.getPod(record.namespace, record.name, signal);
    if (current?.metadata?.uid !== record.uid) return;
    await this.deleteInProvider(current);
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

  /**
   * Seed 001's syncHandler for a pod missing from the API server: delete the
   * provider's pod of that name, unless its pod exists after all (created
   * since we read: read again).
   */
  private async deleteOrphan(state: SyncState, log: Logger): Promise<SyncOutcome | undefined> {
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

  private async forceDelete(
    step: Extract<SyncStep, { kind: 'force-delete' }>,
    log: Logger,
  ): Promise<SyncOutcome> {
    const { core, knownPods } = this.options;
    const ref = identity(step.pod, step.node);
    const result = await forceDeletePod(core, ref);
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

  private async providerDelete(
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
      throw new PodSyncRetryError(`${podKeyOf(step.pod)}: provider delete failed: ${message}`, 'provider', {
        cause: err,
      });
    }
    await knownPods.markTerminating(step.record, identity(step.pod, step.node), step.forceDeleteAt);
    log.info(
      { forceDeleteAt: step.forceDeleteAt },
      'terminating: deleted in provider, force delete scheduled',
    );
    return 'deleted-in-provider';
  }

  private async apply(
    step: Extract<SyncStep, { kind: 'apply' }>,
    log: Logger,
    ownTokens: Set<string>,
  ): Promise<SyncOutcome> {
    const { provider, knownPods, events, clock, claimMs, owner, signal } = this.options;
    const { pod } = step;
    const resolved = await this.resolveEnv(pod, log);

    const token = randomUUID();
    const until = new Date(clock.now() + claimMs).toISOString();
    const claimed = await knownPods.claim(step.record, identity(pod, step.node), {
      token,
      owner,
      hash: step.hash,
      until,
    });
    ownTokens.add(token);

    // A call that outlives the claim could overlap a taker's; cut it off.
    const timeout = AbortSignal.timeout(claimMs);
    const callSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let create = step.mode === 'create';
    let reported: AppliedPodStatus;
    try {
      if (create) {
        reported = await provider.createPod(resolved, callSignal);
      } else {
        try {
          reported = await provider.updatePod(resolved, callSignal);
        } catch (err) {
          if (!isProviderNotFound(err)) throw err;
          // As seed 001 does: a pod the provider does not have is created.
          log.warn('provider no longer has the pod: creating it');
          create = true;
          reported = await provider.createPod(resolved, callSignal);
        }
      }
    } catch (err) {
      await knownPods.releaseClaim(claimed, token).catch((e: unknown) => {
        log.warn({ err: e }, 'could not release claim; it expires');
      });
      if (callSignal.aborted) {
        signal?.throwIfAborted();
        throw new PodSyncRetryError(
          `${podKeyOf(pod)}: provider call took longer than the claim`,
          'provider',
          {
            cause: err,
          },
        );
      }
      return this.providerFailed(pod, create, err, log);
    }
    await events.record(
      pod,
      'Normal',
      create ? POD_EVENT_REASONS.createSuccess : POD_EVENT_REASONS.updateSuccess,
      create ? 'Create pod in provider successfully' : 'Update pod in provider successfully',
    );
    // The mark keeps pod-status off the pod until the status below is
    // recorded, so it is written once. Dropping the claim first lets the
    // delivery our own status write triggers skip at once instead of waiting.
    const push = reportedStatusToWrite(claimed, reported);
    const completed = await knownPods.completeClaim(
      claimed,
      token,
      step.hash,
      push ? { pushUntil: new Date(clock.now() + claimMs).toISOString() } : {},
    );
    if (push) await this.pushStatus(completed, pod, push.status, log);
    return create ? 'created' : 'updated';
  }

  /**
   * Writes the status the provider reported with the create or update
   * (status at once, see AppliedPodStatus), through pod-status's own write
   * path, against the pod read for this reconcile. Best effort: the pod is
   * in the provider and recorded whatever happens here; on failure the push
   * mark is dropped so that pod-status's next poll writes the status.
   */
  private async pushStatus(record: KnownPod, pod: V1Pod, reported: V1PodStatus, log: Logger): Promise<void> {
    const { core, knownPods } = this.options;
    try {
      const written = await writeReportedStatus({ core, knownPods }, record, reported, { pod });
      log.debug({ written, phase: reported.phase }, 'pod status written after apply');
    } catch (err) {
      log.warn({ err }, 'could not write the pod status after applying it; pod-status polls it');
      await knownPods.forgetStatus(record).catch((e: unknown) => {
        log.warn({ err: e }, 'could not drop the status push mark; it expires');
      });
    }
  }

  /**
   * The pod with its env resolved. A mandatory reference missing: a Warning
   * event naming it, and a retryable error (the pod stays Pending).
   */
  private async resolveEnv(pod: V1Pod, log: Logger): Promise<V1Pod> {
    const { envSources, events, env } = this.options;
    try {
      const resolved = await resolvePodEnv(pod, envSources, env);
      for (const w of resolved.warnings) await events.record(pod, 'Warning', w.reason, w.message);
      return resolved.pod;
    } catch (err) {
      if (!(err instanceof EnvResolveError)) throw err;
      await events.record(pod, 'Warning', err.reason, err.message);
      log.warn({ reason: err.reason, message: err.message }, 'env reference unresolved: pod stays Pending');
      throw new PodSyncRetryError(`${podKeyOf(pod)}: ${err.message}`, 'env', { cause: err });
    }
  }

  /**
   * Seed 001's handleProviderError for a create: reason ProviderFailed on the
   * pod (phase Failed when it never restarts, which ends it) and a Warning
   * event. Anything else is retried.
   */
  private async providerFailed(pod: V1Pod, create: boolean, err: unknown, log: Logger): Promise<SyncOutcome> {
    const { core, events } = this.options;
    const message = errorMessage(err);
    const reason = create ? POD_EVENT_REASONS.createFailed : POD_EVENT_REASONS.updateFailed;
    await events.record(pod, 'Warning', reason, message);
    log.warn({ err }, `provider ${create ? 'create' : 'update'} failed`);
    if (create) {
      await writePodStatus(core, identity(pod, pod.spec?.nodeName ?? ''), (current) =>
        isTerminalPhase(current.status?.phase) ? undefined : providerFailedStatus(current, message),
      );
      if (pod.spec?.restartPolicy === 'Never') return 'create-failed';
    }
    throw new PodSyncRetryError(
      `${podKeyOf(pod)}: provider ${create ? 'create' : 'update'} failed: ${message}`,
      'provider',
      {
        cause: err,
      },
    );
  }
}

function identity(pod: V1Pod, node: string): KnownPodIdentity {
  return {
    node,
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
  };
}

function podKeyOf(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The reconciler pod-sync runs, built from a cold start's dependencies: the
 * one code path for reconciling a pod key, used by pod-sync for each event
 * and by the cluster reconciler for pods whose events were lost.
 */
export function createPodReconciler(
  deps: Dependencies,
  options: Pick<PodReconcilerOptions, 'log' | 'owner' | 'waitUntil' | 'signal'> & {
    /** Defaults to the configured nodes. */
    nodes?: readonly string[];
  },
): PodReconciler {
  const { config, clock, kube, table, podProvider } = deps;
  return new PodReconciler({
    core: kube.core,
    provider: podProvider,
    knownPods: new KnownPodStore(table),
    events: new KubePodEventRecorder({ core: kube.core, clock, log: options.log }),
    envSources: kubeEnvSources(kube.core),
    nodes: options.nodes ?? config.nodeNames,
    clock,
    log: options.log,
    owner: options.owner,
    claimMs: config.pods.claimMs,
    waitUntil: options.waitUntil,
    env: {
      ...(config.node.internalIp ? { hostIp: config.node.internalIp } : {}),
      allocatable: config.node.capacity,
    },
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** Stop waiting for other invocations this long before the deadline, to fail cleanly (and be retried). */
const DEADLINE_MARGIN_MS = 3_000;

/**
 * The pod event's detail: pod-sync's event parser. A malformed event is
 * logged and rejected (InvalidEventError), before anything is written.
 */
export function validPodSyncEvent(event: unknown, log: Logger): PodEventDetail {
  try {
    return parsePodEvent(event).detail;
  } catch (err) {
    log.error({ err }, 'rejected pod event: nothing done, the event goes to the dead-letter queue');
    throw err;
  }
}

/** The pod-sync function's entry point: reconciles the key a valid pod event names. */
export async function podSync(
  deps: Dependencies,
  invocation: Invocation,
  detail: PodEventDetail,
): Promise<SyncResult> {
  const { clock, metrics } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const started = clock.monotonic();
  metrics.eventsConsumed(1);
  const reconciler = createPodReconciler(deps, {
    log: log.child({ event: detail.type, resourceVersion: detail.resourceVersion }),
    owner: invocation.requestId,
    waitUntil: invocation.deadline - DEADLINE_MARGIN_MS,
    signal: invocation.signal,
  });
  try {
    const result = await reconciler.reconcile(detail.namespace, detail.name);
    metrics.podSyncLatency(clock.monotonic() - started, result.outcome);
    return result;
  } catch (err) {
    metrics.podSyncLatency(clock.monotonic() - started, err instanceof Error ? err.name : 'error');
    throw err;
  }
}
