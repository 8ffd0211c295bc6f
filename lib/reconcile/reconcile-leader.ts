import type { Dependencies } from '../app/dependencies.ts';
import type { Clock } from '../clock.ts';
import { type LockFence, type LockHandle, LockLostError } from '../lock/lock.ts';
import type { Logger } from '../log/logger.ts';
import { type ReconcilerStatus, ReconcilerStatusStore, sameStatus } from '../release/reconciler-status.ts';
import { releaseLessThan } from '../release/release.ts';
import { RunningReleaseStore } from '../release/running-releases.ts';
import { InitialBackoff, retryWithBackoff } from './initial-backoff.ts';
import { ClusterReconciler, type ReconcileAllResult } from './reconcile-all.ts';
import { decideTransition, type LeaderRelease, releaseCheck, type Transition } from './transitions.ts';

/** A newer release runs: only the newest release leads, so this leader steps down. */
export class NewerReleaseRunningError extends Error {
  override readonly name = 'NewerReleaseRunningError';
  constructor(readonly newest: string) {
    super(`release ${newest} runs: only the newest release reconciles`);
  }
}

export interface ReconcileHooks {
  /** After the status was read at election, with the transition chosen. */
  onTransition?: (transition: Transition) => void;
  /** After each reconcileAll attempt (initial attempts included). */
  onReconcile?: (attempt: { initial: boolean; result?: ReconcileAllResult; error?: unknown }) => void;
}

/**
 * Where one election stands, kept by its holder across its rounds (one
 * invocation's, or the ticks of a warm sandbox): when it was won, whether
 * the election's work is done, and where the first reconcile's retries
 * stand (one schedule per election, however many rounds it takes).
 */
export class ReconcileElection {
  readonly electedAt: number;
  readonly backoff: InitialBackoff;
  led = false;

  constructor(
    readonly epoch: number,
    clock: Clock,
  ) {
    this.electedAt = clock.monotonic();
    this.backoff = new InitialBackoff(clock);
  }
}

/**
 * What a round did: waiting (for the previous leader's requests, when the
 * round may not wait itself), lead (the election's work), periodic (a
 * reconcile).
 */
export type ReconcileRoundDid = 'waiting' | 'lead' | 'periodic';

/** What a leader did, beside what its leader loop reports. */
export interface LeaderSummary {
  transition?: Transition['kind'];
  /** Initial reconcile attempts (1 when the first succeeded). */
  initialAttempts: number;
  /** reconcileAll runs that succeeded. */
  reconciled: number;
  /** Status writes rejected because the lock was no longer ours. */
  rejectedStatusWrites: number;
}

export interface ReconcileLeaderOptions {
  deps: Dependencies;
  /** The invocation's logger. */
  log: Logger;
  /** Who acts (the request id), for pod claims and logs. */
  owner: string;
  /** The reconcile lock's fence: status writes and the pre-pass check go through it. */
  fence: LockFence;
  hooks?: ReconcileHooks;
}

/**
 * What the holder of the reconcile lock does, after the release watcher and
 * leader of Monogon's reconciler: {@link lead} once when elected,
 * {@link periodic} every interval after. Every status write is fenced on the
 * lock; Kubernetes writes cannot be, so each pass first checks, with the
 * same fence, that the lock is still held.
 */
export class ReconcileLeader {
  private readonly own: LeaderRelease;
  private readonly releases: RunningReleaseStore;
  private readonly statuses: ReconcilerStatusStore;
  private readonly fence: LockFence;
  private readonly cluster: ClusterReconciler;
  private readonly counts = { initialAttempts: 0, reconciled: 0, rejectedStatusWrites: 0 };
  private transition: Transition | undefined;
  private heldEpoch: number | undefined;

  constructor(private readonly options: ReconcileLeaderOptions) {
    const { deps, log, owner, fence } = options;
    this.own = {
      release: deps.config.release,
      minCompatibleRelease: deps.config.gating.minCompatibleRelease,
    };
    this.releases = new RunningReleaseStore(deps.table);
    this.fence = fence;
    this.statuses = new ReconcilerStatusStore(deps.table, fence);
    this.cluster = new ClusterReconciler({ deps, log, owner });
  }

  /** The fencing epoch of the lock this leader holds, once elected. */
  get epoch(): number | undefined {
    return this.heldEpoch;
  }

  /** The newest running release when it is newer than this one (this one must not campaign), else undefined. */
  async newerRelease(): Promise<string | undefined> {
    const newest = (await this.releases.range(this.own.release, this.options.deps.clock.now())).max;
    return releaseLessThan(this.own.release, newest) ? newest : undefined;
  }

  /**
   * One round of the holder of `handle`, the reconciler's one unit of work
   * at either cadence: {@link lead} until the election's work is done, then
   * {@link periodic}. With `waitInRound` (a continuous holder), the wait
   * for the previous leader's requests is spent asleep in the round;
   * without (a tick, which must stay short), a round before it is over
   * only says so, and the wait is spent between rounds.
   * @throws LockLostError, NewerReleaseRunningError: the holder steps down.
   */
  async round(
    stop: AbortSignal,
    handle: LockHandle,
    election: ReconcileElection,
    options: { waitInRound: boolean },
  ): Promise<ReconcileRoundDid> {
    this.heldEpoch = handle.epoch;
    const { clock, config } = this.options.deps;
    if (election.led) {
      await this.periodic(stop, handle);
      return 'periodic';
    }
    const waitedMs = clock.monotonic() - election.electedAt;
    if (!options.waitInRound && waitedMs < config.reconcile.leaderWaitMs) return 'waiting';
    await this.lead(stop, handle, { waitedMs, backoff: election.backoff });
    election.led = true;
    return 'lead';
  }

  /**
   * Once, when elected: reads the status and picks its transition; before
   * restricting, waits until no incompatible release runs; when a status
   * exists, waits for the previous leader's requests still in flight (less
   * `waitedMs` already spent since the election); writes the working status;
   * reconciles with backoff until it succeeds; writes the done status.
   * `backoff`: where the initial reconcile's retries stand, for a leader
   * whose election outlives this call (the tick's, which calls it again in
   * the next tick when `stop` cut it short); a fresh schedule by default.
   */
  async lead(
    stop: AbortSignal,
    handle: LockHandle,
    options: { waitedMs?: number; backoff?: InitialBackoff } = {},
  ): Promise<void> {
    const waitedMs = options.waitedMs ?? 0;
    const { deps, log, hooks } = this.options;
    const status = await this.statuses.get();
    const transition = decideTransition(status, this.own);
    this.transition = transition;
    hooks?.onTransition?.(transition);
    log.info({ status, transition: transition.kind, epoch: handle.epoch }, 'elected: reconciler status read');
    if (transition.kind === 'restrict') await this.waitForCompatibleReleases(stop);
    // The previous leader's Kubernetes requests may still be in flight (best effort).
    const wait = deps.config.reconcile.leaderWaitMs - waitedMs;
    if (status && wait > 0) await deps.clock.sleep(wait, stop);
    const working =
      transition.kind === 'restrict' || transition.kind === 'mark-working' ? transition.write : undefined;
    if (working) await this.writeStatus(handle, working);
    // A function that recorded its release just before the write read the old status: let it finish.
    if (transition.kind === 'restrict') await this.waitForCompatibleReleases(stop);
    await this.initialReconcile(stop, handle, options.backoff ?? new InitialBackoff(deps.clock));
    if (!sameStatus(status, transition.done)) await this.writeStatus(handle, transition.done);
  }

  /** Every interval after: steps down when a newer release runs, else reconciles once (a failure waits for the next). */
  async periodic(stop: AbortSignal, handle: LockHandle): Promise<void> {
    await this.checkReleases();
    try {
      await this.reconcileOnce(stop, handle, false);
    } catch (err) {
      if (stop.aborted || err instanceof LockLostError) throw err;
      this.options.log.warn({ err }, 'periodic reconcile failed; retrying next period');
    }
  }

  summary(): LeaderSummary {
    return { ...(this.transition ? { transition: this.transition.kind } : {}), ...this.counts };
  }

  /** Steps down when a newer release runs; returns whether incompatible releases still run. */
  private async checkReleases(): Promise<{ incompatible?: string }> {
    const range = await this.releases.range(this.own.release, this.options.deps.clock.now());
    const check = releaseCheck(range, this.own);
    if (check.verdict === 'newer') throw new NewerReleaseRunningError(check.release ?? '');
    return check.verdict === 'incompatible' ? { incompatible: check.release ?? '' } : {};
  }

  private async waitForCompatibleReleases(stop: AbortSignal): Promise<void> {
    const { deps, log } = this.options;
    let logged: string | undefined;
    for (;;) {
      const { incompatible } = await this.checkReleases();
      if (incompatible === undefined) return;
      if (incompatible !== logged) {
        logged = incompatible;
        log.info(
          { running: incompatible, needed: this.own.minCompatibleRelease },
          'an incompatible release still runs: waiting for it to stop before restricting the status',
        );
      }
      await deps.clock.sleep(deps.config.lock.pollMs, stop);
    }
  }

  private async writeStatus(handle: LockHandle, status: ReconcilerStatus): Promise<void> {
    const { deps, log } = this.options;
    try {
      await this.statuses.write(handle, status, deps.clock.now());
      log.info({ status, epoch: handle.epoch }, 'reconciler status written');
    } catch (err) {
      if (err instanceof LockLostError) {
        this.counts.rejectedStatusWrites++;
        log.error({ err, status, epoch: handle.epoch }, 'status write rejected: lock lost, stopping');
      }
      throw err;
    }
  }

  private async initialReconcile(
    stop: AbortSignal,
    handle: LockHandle,
    backoff: InitialBackoff,
  ): Promise<void> {
    const { deps, log } = this.options;
    log.info('performing the initial reconcile');
    await retryWithBackoff({
      backoff,
      clock: deps.clock,
      stop,
      attempt: async () => {
        this.counts.initialAttempts++;
        await this.reconcileOnce(stop, handle, true);
      },
      fatal: (err) => err instanceof LockLostError,
      onFailure: (err, worthLogging) => {
        if (worthLogging) {
          log.error({ err, attempts: backoff.attempts }, 'still could not do the initial reconcile');
        }
      },
    });
    log.info({ attempts: backoff.attempts }, 'initial reconcile succeeded');
  }

  private async reconcileOnce(
    stop: AbortSignal,
    handle: LockHandle,
    initial: boolean,
  ): Promise<ReconcileAllResult> {
    const { hooks } = this.options;
    await this.fence.assertHeld(handle);
    try {
      const result = await this.cluster.reconcileAll(stop);
      this.counts.reconciled++;
      hooks?.onReconcile?.({ initial, result });
      return result;
    } catch (err) {
      hooks?.onReconcile?.({ initial, error: err });
      throw err;
    }
  }
}
