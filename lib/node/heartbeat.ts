import type { Clock } from '../clock.ts';
import type { Invocation } from '../invocation.ts';
import { type LeaderLoopResult, runAsLeader, settledValues } from '../lock/leader-loop.ts';
import type { LockStore } from '../lock/lock.ts';
import type { Logger } from '../log/logger.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import type { NodeController, TickResult } from './node-controller.ts';

/** The lock that makes one invocation at a time the heartbeat holder for all nodes of a deployment. */
export const HEARTBEAT_LOCK = 'heartbeat';

export interface HeartbeatOptions {
  lockStore: LockStore;
  controllers: readonly NodeController[];
  clock: Clock;
  log: Logger;
  invocation: Invocation;
  renewIntervalMs: number;
  lockTtlMs: number;
  lockPollMs: number;
  maxParallel: number;
  stopBeforeDeadlineMs: number;
  /** Called before each tick round, e.g. to bring the node settings up to date. Must not throw. */
  beforeRound?: () => Promise<void>;
  /** Called after each tick round, for metrics and tests. */
  onTick?: (results: TickResult[]) => void;
  /** Called when the heartbeat lock was taken over from a holder that stopped renewing it. */
  onLockTakeover?: (lock: string) => void;
}

export type HeartbeatResult = LeaderLoopResult;

/**
 * One scheduled heartbeat invocation: as the holder of the heartbeat lock
 * (see runAsLeader for the hand-over between overlapping invocations), it
 * ticks every node each renew interval with bounded parallelism; a node's
 * first tick registers it and ensures its lease.
 */
export function runHeartbeat(options: HeartbeatOptions): Promise<HeartbeatResult> {
  const { controllers, log, maxParallel } = options;
  const names = controllers.map((c) => c.name);
  return runAsLeader(
    {
      lock: HEARTBEAT_LOCK,
      lockStore: options.lockStore,
      clock: options.clock,
      log,
      invocation: options.invocation,
      lockTtlMs: options.lockTtlMs,
      lockPollMs: options.lockPollMs,
      intervalMs: options.renewIntervalMs,
      stopBeforeDeadlineMs: options.stopBeforeDeadlineMs,
      ...(options.onLockTakeover ? { onLockTakeover: options.onLockTakeover } : {}),
    },
    {
      round: async (stop) => {
        await options.beforeRound?.();
        const results = settledValues(
          await mapSettledLimit(controllers, maxParallel, (c) => c.tick(stop)),
          names,
          log,
          stop,
          'node heartbeat failed; retrying on the next tick',
        );
        options.onTick?.(results);
      },
    },
  );
}
