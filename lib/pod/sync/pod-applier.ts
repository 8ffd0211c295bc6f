import { randomUUID } from 'node:crypto';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { podKey } from '../../kube/pod-key.ts';
import type { Logger } from '../../log/logger.ts';
import {
  type AppliedPodStatus,
  isProviderNotFound,
  isProviderUnsupported,
  isProviderWaiting,
  type PodProvider,
} from '../../provider/provider.ts';
import { errorMessage } from '../../util/error-message.ts';
import type { DownwardApiOptions } from '../env/downward-api.ts';
import { EnvResolveError } from '../env/env-reasons.ts';
import type { EnvSources } from '../env/env-sources.ts';
import { resolvePodEnv } from '../env/pod-env.ts';
import type { KnownPod, KnownPodStore } from '../known/known-pods.ts';
import {
  isTerminalPhase,
  providerFailedStatus,
  reportedStatusToWrite,
  waitingStatus,
} from '../status/pod-status-builders.ts';
import { OLDER_READING, podRef, writePodStatus, writeProviderStatus } from '../status/pod-status-writes.ts';
import { isOlderReading, stampReadAt } from '../status/status-order.ts';
import { POD_EVENT_REASONS, type PodEventRecorder } from './pod-events.ts';
import type { SyncStep } from './pod-sync-decision.ts';
import { PodSyncRetryError, type SyncOutcome } from './pod-sync-result.ts';

/**
 * The apply step of a pod reconcile: the pod's env resolved, a claim taken on
 * its known-pod record, createPod or updatePod called under it, the claim
 * completed with the hash applied (or released on failure).
 *
 * ## The first status (status at once)
 *
 * When the provider resolves createPod/updatePod with the pod's status, that
 * status is written to the API server (as pod-status writes it, against the
 * pod this reconcile read, so without reading it again) while the claim is
 * still held, together with the Event, and its hash is recorded by the same
 * write that completes the claim. pod-status leaves claimed pods alone, so
 * the status is written once. A failed write is logged and nothing is
 * recorded, so pod-status's poll writes the status: it never fails the
 * reconcile, whose provider call is done and recorded.
 */

export interface PodApplierOptions {
  core: CoreApi;
  provider: PodProvider;
  knownPods: KnownPodStore;
  events: PodEventRecorder;
  envSources: EnvSources;
  clock: Clock;
  /** Who claims (the request id), for logs. */
  owner: string;
  /** How long a claim keeps others waiting, and the longest provider call. */
  claimMs: number;
  env?: DownwardApiOptions;
  signal?: AbortSignal;
}

export class PodApplier {
  constructor(private readonly options: PodApplierOptions) {}

  /**
   * Creates or updates the pod in the provider, exactly once per change among
   * concurrent deliveries. `ownTokens` collects the claims taken, so that the
   * reconcile never waits for its own claim.
   * @throws KnownPodConflictError when the claim is lost (the reconcile reads again).
   * @throws PodSyncRetryError when env or the provider fails.
   */
  async apply(
    step: Extract<SyncStep, { kind: 'apply' }>,
    log: Logger,
    ownTokens: Set<string>,
  ): Promise<SyncOutcome> {
    const { knownPods, events, clock, claimMs, owner } = this.options;
    const { pod } = step;
    const resolved = await this.resolveEnv(pod, log);

    const token = randomUUID();
    // The call is cut off a whole claim after this, before the claim is written: a
    // waiter that then watches the claim unchanged for a whole claim never overlaps it.
    const cutOff = AbortSignal.timeout(claimMs);
    const until = new Date(clock.now() + claimMs).toISOString();
    const claimed = await knownPods.claim(
      step.record,
      { ...podRef(pod), node: step.node },
      { token, owner, hash: step.hash, until },
    );
    ownTokens.add(token);

    const called = await this.callProvider(step, resolved, { claimed, token, cutOff }, log);
    if ('outcome' in called) return called.outcome;
    const { create, reported, readAtMs } = called;
    // Still under the claim, which keeps pod-status and other deliveries off
    // the pod: the Event and the status the provider reported, at once.
    const push = reportedStatusToWrite(claimed, reported);
    const [, pushed] = await Promise.all([
      events.record(
        pod,
        'Normal',
        create ? POD_EVENT_REASONS.createSuccess : POD_EVENT_REASONS.updateSuccess,
        create ? 'Create pod in provider successfully' : 'Update pod in provider successfully',
      ),
      push ? this.pushStatus(pod, push.status, readAtMs, log) : false,
    ]);
    const deadline = pod.spec?.activeDeadlineSeconds;
    await knownPods.completeClaim(claimed, token, step.hash, {
      ...(push && pushed ? { status: { seen: claimed.statusHash, hash: push.hash } } : {}),
      ...(deadline !== undefined ? { activeDeadlineSeconds: deadline } : {}),
    });
    return create ? 'created' : 'updated';
  }

  /**
   * createPod or updatePod under the claim; a pod the provider no longer has
   * is created (as virtual-kubelet's createOrUpdatePod does). On failure the
   * claim is released and the failure handled (providerFailed).
   */
  private async callProvider(
    step: Extract<SyncStep, { kind: 'apply' }>,
    resolved: V1Pod,
    claim: { claimed: KnownPod; token: string; cutOff: AbortSignal },
    log: Logger,
  ): Promise<{ create: boolean; reported: AppliedPodStatus; readAtMs: number } | { outcome: SyncOutcome }> {
    const { provider, knownPods, signal, clock } = this.options;
    const { claimed, token, cutOff } = claim;
    const calledAt = clock.now();
    // A call that outlives the claim could overlap a taker's; cut it off.
    const callSignal = signal ? AbortSignal.any([signal, cutOff]) : cutOff;
    let create = step.mode === 'create';
    try {
      let reported: AppliedPodStatus;
      if (create) reported = await provider.createPod(resolved, callSignal);
      else {
        try {
          reported = await provider.updatePod(resolved, callSignal);
        } catch (err) {
          if (!isProviderNotFound(err)) throw err;
          log.warn('provider no longer has the pod: creating it');
          create = true;
          reported = await provider.createPod(resolved, callSignal);
        }
      }
      // A create or update reports the pod as it stands when the call ends (AppliedPodStatus).
      return { create, reported, readAtMs: clock.now() };
    } catch (err) {
      await knownPods.releaseClaim(claimed, token).catch((e: unknown) => {
        log.warn({ err: e }, 'could not release claim; it expires');
      });
      if (callSignal.aborted) {
        signal?.throwIfAborted();
        throw new PodSyncRetryError(
          `${podKey(step.pod.metadata)}: provider call took longer than the claim`,
          'provider',
          { cause: err },
        );
      }
      if (isProviderWaiting(err)) {
        // As an unresolved env reference: the kubelet's Event, the pod stays Pending (its containers waiting), tried again.
        await this.options.events.record(step.pod, 'Warning', err.reason, err.message);
        await writePodStatus(this.options.core, podRef(step.pod), (current) => {
          if (isTerminalPhase(current.status?.phase) || (current.status?.containerStatuses?.length ?? 0) > 0)
            return undefined;
          if (isOlderReading(current.status, calledAt)) return OLDER_READING;
          return stampReadAt(waitingStatus(current), calledAt);
        }).catch((e: unknown) => log.warn({ err: e }, 'could not write the waiting status'));
        log.info(
          { reason: err.reason, message: err.message },
          'provider cannot start the pod yet: it stays Pending',
        );
        throw new PodSyncRetryError(`${podKey(step.pod.metadata)}: ${err.message}`, 'provider', {
          cause: err,
        });
      }
      // Whatever the provider reported of the pod after this call began is newer than its failure.
      const readAtMs = calledAt;
      return { outcome: await this.providerFailed(step.pod, { create, readAtMs }, err, log) };
    }
  }

  /**
   * Writes the status the provider reported with the create or update
   * (status at once, see AppliedPodStatus) as pod-status would, against the
   * pod read for this reconcile. Whether it is now the pod's status, to be
   * recorded with the claim's completion. Best effort: on failure nothing is
   * recorded, so that pod-status's next poll writes the status.
   */
  private async pushStatus(
    pod: V1Pod,
    reported: V1PodStatus,
    readAtMs: number,
    log: Logger,
  ): Promise<boolean> {
    try {
      const written = await writeProviderStatus(this.options.core, podRef(pod), reported, { pod, readAtMs });
      log.debug({ written, phase: reported.phase }, 'pod status written after apply');
      // Stale: a newer reading is on the pod, and the record names its hash.
      return written === 'written' || written === 'unchanged';
    } catch (err) {
      log.warn({ err }, 'could not write the pod status after applying it; pod-status polls it');
      return false;
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
      throw new PodSyncRetryError(`${podKey(pod.metadata)}: ${err.message}`, 'env', { cause: err });
    }
  }

  /**
   * virtual-kubelet's handleProviderError (node/pod.go) for a create: reason
   * ProviderFailed on the pod (phase Failed when it never restarts, which
   * ends it) and a Warning event. A pod the provider cannot run as specified
   * (ProviderUnsupportedError) is not retried either: the same spec fails the
   * same way. Anything else is retried.
   */
  private async providerFailed(
    pod: V1Pod,
    { create, readAtMs }: { create: boolean; readAtMs: number },
    err: unknown,
    log: Logger,
  ): Promise<SyncOutcome> {
    const { core, events } = this.options;
    const message = errorMessage(err);
    const reason = create ? POD_EVENT_REASONS.createFailed : POD_EVENT_REASONS.updateFailed;
    await events.record(pod, 'Warning', reason, message);
    log.warn({ err }, `provider ${create ? 'create' : 'update'} failed`);
    if (create) {
      // Not over a status read from the provider after this call began: the provider has the pod after all.
      await writePodStatus(core, podRef(pod), (current) => {
        if (isTerminalPhase(current.status?.phase)) return undefined;
        if (isOlderReading(current.status, readAtMs)) return OLDER_READING;
        return stampReadAt(providerFailedStatus(current, message), readAtMs);
      });
      if (pod.spec?.restartPolicy === 'Never' || isProviderUnsupported(err)) return 'create-failed';
    }
    throw new PodSyncRetryError(
      `${podKey(pod.metadata)}: provider ${create ? 'create' : 'update'} failed: ${message}`,
      'provider',
      { cause: err },
    );
  }
}
