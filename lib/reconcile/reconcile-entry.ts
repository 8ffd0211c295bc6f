import type { Dependencies } from '../app/dependencies.ts';
import type { Invocation } from '../invocation.ts';
import { type LeaderLoopResult, runAsLeader } from '../lock/leader-loop.ts';
import { LockLostError } from '../lock/lock.ts';
import { RECONCILE_LOCK } from '../lock/lock-names.ts';
import {
  type LeaderSummary,
  NewerReleaseRunningError,
  type ReconcileHooks,
  ReconcileLeader,
} from './reconcile-leader.ts';

/** What one reconcile invocation did. */
export type ReconcileResult =
  | { role: 'not-newest'; newest: string }
  | (Omit<LeaderLoopResult, 'stopped'> &
      LeaderSummary & { stopped?: LeaderLoopResult['stopped'] | 'newer-release' });

/**
 * The reconcile function's entry point, after Monogon's reconciler (watch
 * the running releases, elect on a lock, lead): only the newest running
 * release campaigns for the reconcile lock; its holder runs
 * {@link ReconcileLeader.lead} in its first round and
 * {@link ReconcileLeader.periodic} every SVK_RECONCILE_INTERVAL_SECONDS after
 * until it hands over near its deadline. A leader that loses the lock, or
 * sees a newer release, stops at once.
 */
export async function reconcile(
  deps: Dependencies,
  invocation: Invocation,
  hooks: ReconcileHooks = {},
): Promise<ReconcileResult> {
  const { config } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
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
      { round: (stop, round, handle) => leader.round(stop, round, handle) },
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
