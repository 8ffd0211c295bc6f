import type { Dependencies } from '../app/dependencies.ts';
import type { Invocation } from '../invocation.ts';
import { type LeaderLoopResult, runAsLeader } from '../lock/leader-loop.ts';
import { type LockHandle, LockLostError } from '../lock/lock.ts';
import type { Logger } from '../log/logger.ts';
import { type ReconcilerStatus, ReconcilerStatusStore, sameStatus } from '../release/reconciler-status.ts';
import { releaseLessThan } from '../release/release.ts';
import { RunningReleaseStore } from '../release/running-releases.ts';
import { ClusterReconciler, type ReconcileAllResult } from './reconcile-all.ts';
import { decideTransition, type LeaderRelease, releaseCheck, type Transition } from './transitions.ts';

/** The lock whose holder is the one reconciler of a deployment. */
export const RECONCILE_LOCK = 'reconcile';
/** Initial reconcile: exponential backoff from 100 ms (seed 004), doubling up to this. */
export const BACKOFF_START_MS = 100;
export const BACKOFF_MAX_MS = 10_000;
/** Failed initial attempts are logged once this long has passed, then at most this often (seed: 2 s, 10 s). */
const LOG_ERRORS_AFTER_MS = 2_000;
const LOG_ERRORS_EVERY_MS = 10_000;

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

/** What one reconcile invocation did. */
export type ReconcileResult =
  | { role: 'not-newest'; newest: string }
  | (Omit<LeaderLoopResult, 'stopped'> & {
      stopped?: LeaderLoopResult['stopped'] | 'newer-release';
      transition?: Transition['kind'];
      /** Initial reconcile attempts (1 when the first succeeded). */
      initialAttempts: number;
      /** reconcileAll runs that succeeded. */
      reconciled: number;
      /** Status writes rejected because the lock was no longer ours. */
      rejectedStatusWrites: number;
    });

/**
 * The reconcile function's entry point (seed 004's watchReleases, elect and
 * lead on a DynamoDB lock). Only the newest running release campaigns. The
 * holder, once elected: reads the status and picks the seed's transition;
 * before restricting, waits until no incompatible release runs; when a status
 * exists, waits SVK_RECONCILE_LEADER_WAIT_MS for the previous leader's
 * requests still in flight; writes the working status; runs the first
 * reconcileAll with exponential backoff until it succeeds; writes the done
 * status; then reconciles every SVK_RECONCILE_INTERVAL_SECONDS until it hands
 * over near its deadline. Every status write is fenced on the lock: a
 * deposed leader's write is rejected and it stops at once. Kubernetes writes
 * cannot be fenced, so before each pass the leader re-reads the lock.
 */
export async function reconcile(
  deps: Dependencies,
  invocation: Invocation,
  hooks: ReconcileHooks = {},
): Promise<ReconcileResult> {
  const { config, clock, table } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const own: LeaderRelease = {
    release: config.release,
    minCompatibleRelease: config.gating.minCompatibleRelease,
  };
  const releases = new RunningReleaseStore(table);
  const statuses = new ReconcilerStatusStore(table);
  const locks = deps.lockStore;
  const cluster = new ClusterReconciler({ deps, log, owner: invocation.requestId });
  const counts = { initialAttempts: 0, reconciled: 0, rejectedStatusWrites: 0 };
  let transition: Transition | undefined;
  let epoch: number | undefined;

  const newest = (await releases.range(own.release, clock.now())).max;
  if (releaseLessThan(own.release, newest)) {
    log.info({ release: own.release, newest }, 'a newer release runs: not campaigning');
    return { role: 'not-newest', newest };
  }

  /** Steps down when a newer release runs; returns whether incompatible releases still run. */
  const checkReleases = async (): Promise<{ incompatible?: string }> => {
    const check = releaseCheck(await releases.range(own.release, clock.now()), own);
    if (check.verdict === 'newer') throw new NewerReleaseRunningError(check.release ?? '');
    return check.verdict === 'incompatible' ? { incompatible: check.release ?? '' } : {};
  };

  /** Kubernetes writes cannot be fenced: re-read the lock before acting on the cluster. */
  const assertLeader = async (handle: LockHandle) => {
    const record = await locks.get(handle.name);
    if (record?.owner !== handle.owner || record.epoch !== handle.epoch) {
      throw new LockLostError(
        handle.name,
        `now held by epoch ${record?.epoch} (${record?.owner ?? 'nobody'})`,
      );
    }
  };

  const writeStatus = async (handle: LockHandle, status: ReconcilerStatus) => {
    try {
      await statuses.write(handle, status, clock.now());
      log.info({ status, epoch: handle.epoch }, 'reconciler status written');
    } catch (err) {
      if (err instanceof LockLostError) {
        counts.rejectedStatusWrites++;
        log.error({ err, status, epoch: handle.epoch }, 'status write rejected: lock lost, stopping');
      }
      throw err;
    }
  };

  const waitForCompatibleReleases = async (stop: AbortSignal) => {
    let logged: string | undefined;
    for (;;) {
      const { incompatible } = await checkReleases();
      if (incompatible === undefined) return;
      if (incompatible !== logged) {
        logged = incompatible;
        log.info(
          { running: incompatible, needed: own.minCompatibleRelease },
          'an incompatible release still runs: waiting for it to stop before restricting the status',
        );
      }
      await clock.sleep(config.lock.pollMs, stop);
    }
  };

  const reconcileOnce = async (stop: AbortSignal, handle: LockHandle, initial: boolean) => {
    await assertLeader(handle);
    try {
      const result = await cluster.reconcileAll(stop);
      counts.reconciled++;
      hooks.onReconcile?.({ initial, result });
      return result;
    } catch (err) {
      hooks.onReconcile?.({ initial, error: err });
      throw err;
    }
  };

  const initialReconcile = async (stop: AbortSignal, handle: LockHandle) => {
    log.info('performing the initial reconcile');
    const started = clock.monotonic();
    let logAt = started + LOG_ERRORS_AFTER_MS;
    let delay = BACKOFF_START_MS;
    for (;;) {
      counts.initialAttempts++;
      try {
        await reconcileOnce(stop, handle, true);
        log.info({ attempts: counts.initialAttempts }, 'initial reconcile succeeded');
        return;
      } catch (err) {
        if (stop.aborted || err instanceof LockLostError) throw err;
        // An API server that is just starting fails for a while: keep the logs clean.
        if (clock.monotonic() >= logAt) {
          log.error({ err, attempts: counts.initialAttempts }, 'still could not do the initial reconcile');
          logAt = clock.monotonic() + LOG_ERRORS_EVERY_MS;
        }
      }
      await clock.sleep(delay, stop);
      delay = Math.min(delay * 2, BACKOFF_MAX_MS);
    }
  };

  const lead = async (stop: AbortSignal, handle: LockHandle) => {
    const status = await statuses.get();
    transition = decideTransition(status, own);
    hooks.onTransition?.(transition);
    log.info({ status, transition: transition.kind, epoch: handle.epoch }, 'elected: reconciler status read');
    if (transition.kind === 'restrict') await waitForCompatibleReleases(stop);
    // The previous leader's Kubernetes requests may still be in flight (seed: best effort).
    if (status) await clock.sleep(config.reconcile.leaderWaitMs, stop);
    const working =
      transition.kind === 'restrict' || transition.kind === 'mark-working' ? transition.write : undefined;
    if (working) await writeStatus(handle, working);
    // A function that recorded its release just before the write read the old status: let it finish.
    if (transition.kind === 'restrict') await waitForCompatibleReleases(stop);
    await initialReconcile(stop, handle);
    if (!sameStatus(status, transition.done)) await writeStatus(handle, transition.done);
  };

  const periodic = async (stop: AbortSignal, handle: LockHandle) => {
    await checkReleases();
    try {
      await reconcileOnce(stop, handle, false);
    } catch (err) {
      if (stop.aborted || err instanceof LockLostError) throw err;
      log.warn({ err }, 'periodic reconcile failed; retrying next period');
    }
  };

  try {
    const loop = await runAsLeader(
      {
        lock: RECONCILE_LOCK,
        lockStore: locks,
        clock,
        log,
        invocation,
        lockTtlMs: config.lock.ttlMs,
        lockPollMs: config.lock.pollMs,
        intervalMs: config.reconcile.intervalMs,
        stopBeforeDeadlineMs: config.reconcile.stopBeforeDeadlineMs,
        onLockTakeover: (lock) => deps.metrics.lockTakeover(lock),
      },
      {
        round: async (stop, round, handle) => {
          epoch = handle.epoch;
          try {
            await (round === 1 ? lead(stop, handle) : periodic(stop, handle));
          } catch (err) {
            // Stopped (deadline, lock lost, invocation ended) while waiting: the loop ends on its own.
            if (!stop.aborted) throw err;
          }
        },
      },
    );
    return { ...loop, ...summary() };
  } catch (err) {
    if (err instanceof LockLostError) return stoppedEarly('lock-lost', log, err);
    if (err instanceof NewerReleaseRunningError) return stoppedEarly('newer-release', log, err);
    throw err;
  }

  function summary() {
    return { ...(transition ? { transition: transition.kind } : {}), ...counts };
  }

  function stoppedEarly(stopped: 'lock-lost' | 'newer-release', l: Logger, err: Error): ReconcileResult {
    l.warn({ err, epoch }, `reconcile leader stopped: ${stopped}`);
    return {
      role: 'holder',
      ...(epoch !== undefined ? { epoch } : {}),
      rounds: counts.reconciled,
      stopped,
      ...summary(),
    };
  }
}
