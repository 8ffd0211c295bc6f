import { type Invocation, invocationLog } from '../invocation.ts';
import { type LeaderLoopResult, runAsLeader } from '../lock/leader-loop.ts';
import { POD_STATUS_LOCK } from '../lock/lock-names.ts';
import { type PodStatusRound, PodStatusRounds } from '../pod/status/pod-status-round.ts';
import { ProviderWakeups } from '../pod/status/provider-wakeups.ts';
import type { Dependencies } from './dependencies.ts';

export type { PodStatusRound } from '../pod/status/pod-status-round.ts';

export interface PodStatusResult extends LeaderLoopResult {
  /** Rounds a provider change brought forward (provider-wakeups.ts); absent when the provider pushes none. */
  woken?: number;
}

export interface PodStatusHooks {
  /** Called after each round. */
  onRound?: (round: PodStatusRound) => void;
}

/**
 * The pod-status function's one entry point. Like the heartbeat, it stands by
 * for the `pod-status` lock, then every SVK_POD_STATUS_INTERVAL_SECONDS until
 * shortly before its deadline, and at once when the provider reports a
 * change on a node (its optional `watchChanges`, provider-wakeups.ts):
 * writes changed provider statuses of every node's known pods,
 * force-deletes pods whose grace period ended, and (when it takes over,
 * then every SVK_POD_DANGLING_INTERVAL_SECONDS) deletes dangling provider
 * pods. Its API writes are not fenced: two holders for a
 * moment (a stale lock taken over) write the same statuses, and every
 * DynamoDB write is conditional.
 */
export async function podStatus(
  deps: Dependencies,
  invocation: Invocation,
  hooks: PodStatusHooks = {},
): Promise<PodStatusResult> {
  const { config, clock } = deps;
  const log = invocationLog(deps.log, invocation);
  const rounds = new PodStatusRounds(deps);
  const wakeups = new ProviderWakeups({
    provider: deps.podProvider,
    nodes: config.nodeNames,
    clock,
    log,
  });
  // The streams close with the holder's stop, or here when the loop ended without it.
  const streams = new AbortController();
  const result = await runAsLeader(
    {
      lock: POD_STATUS_LOCK,
      lockStore: deps.lockStore,
      clock,
      log,
      invocation,
      lockTtlMs: config.lock.ttlMs,
      lockPollMs: config.lock.pollMs,
      intervalMs: config.pods.statusIntervalMs,
      stopBeforeDeadlineMs: config.pods.statusStopBeforeDeadlineMs,
      onLockTakeover: (lock) => deps.metrics.lockTakeover(lock),
    },
    {
      start: async (stop) => wakeups.open(AbortSignal.any([stop, streams.signal])),
      round: async (stop) => {
        const round: PodStatusRound = await rounds.round(stop, log);
        hooks.onRound?.(round);
      },
      ...(wakeups.available ? { wait: (ms, stop) => wakeups.wait(ms, stop) } : {}),
    },
  ).finally(() => streams.abort());
  return wakeups.available ? { ...result, woken: wakeups.woken } : result;
}
