import type { Clock } from '../clock.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import type { Invocation } from '../invocation.ts';
import type { LeaderLoopResult } from '../lock/leader-loop.ts';
import type { LockStore } from '../lock/lock.ts';
import type { Logger } from '../log/logger.ts';
import type { ReleaseRefused } from '../release/gate.ts';
import type { TickResult } from './node-controller.ts';

/** How long a cold start waits for the node config (DynamoDB checkpoints) before using what it has. */
export const RESOLVE_BUDGET_MS = 3_000;

/** The nodes one heartbeat drives: a full tick as the holder, a lease renewal only while degraded. */
export interface HeartbeatNode {
  readonly name: string;
  tick(signal?: AbortSignal): Promise<TickResult>;
  keepAlive(signal: AbortSignal | undefined, unavailableSince: Date): Promise<TickResult>;
}

export interface HeartbeatOptions {
  lockStore: LockStore;
  controllers: readonly HeartbeatNode[];
  clock: Clock;
  log: Logger;
  invocation: Invocation;
  renewIntervalMs: number;
  lockTtlMs: number;
  lockPollMs: number;
  maxParallel: number;
  stopBeforeDeadlineMs: number;
  /**
   * Longest full tick of one node (its lease is renewed first in it): long
   * enough for a slow API server, short enough that the next round's
   * renewal comes well within the lease's duration.
   */
  tickTimeoutMs: number;
  /**
   * The release gate, checked before the lock is taken: undefined when this
   * release may act, else the refusal. Rejects when the state table cannot
   * be read.
   */
  releaseGate?: () => Promise<ReleaseRefused | undefined>;
  /** Called before each holder round, e.g. to bring the node settings up to date. Must not throw. */
  beforeRound?: () => Promise<void>;
  /** Called after each round, for metrics and tests. */
  onTick?: (results: TickResult[]) => void;
  /** Called when the heartbeat lock was taken over from a holder that stopped renewing it. */
  onLockTakeover?: (lock: string) => void;
  /** Called after each round that renewed the leases without the lock, with the nodes renewed. */
  onDegraded?: (nodes: number) => void;
}

export interface HeartbeatResult extends LeaderLoopResult {
  /** Rounds that renewed the leases without the lock, the lock store being unreachable. */
  degradedRounds: number;
  /** The release gate's refusal: nothing was done. */
  refusal?: ReleaseRefused;
}

/**
 * `settings` with the intervals and lease duration of `timing`: a node config
 * that changes them takes effect from the next invocation (the heartbeat's
 * loop runs on the timing it started with).
 */
export function keepTiming(settings: NodeSettings, timing: NodeSettings): NodeSettings {
  return {
    ...settings,
    leaseDurationSeconds: timing.leaseDurationSeconds,
    leaseRenewIntervalMs: timing.leaseRenewIntervalMs,
    statusIntervalMs: timing.statusIntervalMs,
    pingIntervalMs: timing.pingIntervalMs,
  };
}
