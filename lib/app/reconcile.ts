import { type Invocation, invocationLog } from '../invocation.ts';
import { type LeaderLoopResult, runAsLeader } from '../lock/leader-loop.ts';
import { LockLostError } from '../lock/lock.ts';
import { RECONCILE_LOCK } from '../lock/lock-names.ts';
import {
  type LeaderSummary,
  NewerReleaseRunningError,
  ReconcileElection,
  type ReconcileHooks,
  ReconcileLeader,
} from '../reconcile/reconcile-leader.ts';
import type { Dependencies } from './dependencies.ts';

/** What one reconcile invocation did. */
export type ReconcileResult =
  | { role: 'not-newest'; newest: string }
  | (Omit<LeaderLoopResult, 'stopped'> &
      LeaderSummary & { stopped?: LeaderLoopResult['stopped'] | 'newer-release' });

/**
 * The reconcile function's entry point, after Monogon's reconciler (watch
 * the running releases, elect on a lock, lead): only the newest running
 * release campaigns for the reconcile lock; its holder runs a round
 * ({@link ReconcileLeader.round}: the election's work first, a reconcile
 * after) every SVK_RECONCILE_INTERVAL_SECONDS until it hands over near its
 * deadline. A leader that loses the lock, or
 * sees a newer release, stops at once.
 */
export async function reconcile(
  deps: Dependencies,
  invocation: Invocation,
  hooks: ReconcileHooks = {},
): Promise<ReconcileResult> {
  const { config } = deps;
  const log = invocationLog(deps.log, invocation);
  const leader = new ReconcileLeader({
    deps,
    log,
    owner: invocation.requestId,
    fence: deps.lockStore,
    hooks,
  });
  const newest = await leader.newerRelease();
  if (newest !== undefined) {
    log.info({ release: config.release, newest }, 'a newer release runs: not campaigning');
    return { role: 'not-newest', newest };
  }
  let election: ReconcileElection | undefined;
  try {
    const loop = await runAsLeader(
      {
        lock: RECONCILE_LOCK,
        lockStore: deps.lockStore,
        clock: deps.clock,
        log,
        invocation,
        lockTtlMs: config.lock.ttlMs,
        lockPollMs: config.lock.pollMs,
        intervalMs: config.reconcile.intervalMs,
        stopBeforeDeadlineMs: config.reconcile.stopBeforeDeadlineMs,
        onLockTakeover: (lock) => deps.metrics.lockTakeover(lock),
      },
      {
        round: async (stop, _round, handle) => {
          election ??= new ReconcileElection(handle.epoch, deps.clock);
          try {
            await leader.round(stop, handle, election, { waitInRound: true });
          } catch (err) {
            // Stopped (deadline, lock lost, invocation ended) while waiting: the loop ends on its own.
            if (!stop.aborted) throw err;
          }
        },
      },
    );
    return { ...loop, ...leader.summary() };
  } catch (err) {
    const stopped =
      err instanceof LockLostError
        ? 'lock-lost'
        : err instanceof NewerReleaseRunningError
          ? 'newer-release'
          : undefined;
    if (stopped === undefined) throw err;
    const { epoch } = leader;
    log.warn({ err, epoch }, `reconcile leader stopped: ${stopped}`);
    const summary = leader.summary();
    return {
      role: 'holder',
      ...(epoch !== undefined ? { epoch } : {}),
      rounds: summary.reconciled,
      stopped,
      ...summary,
    };
  }
}
