import type { Dependencies } from '../app/dependencies.ts';
import type { TickPartName } from '../config/env-variables.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { Logger } from '../log/logger.ts';
import { HeartbeatTick } from '../node/heartbeat-tick.ts';
import { PodStatusRounds } from '../pod/status/pod-status-round.ts';
import { PodWatchTick } from '../pod/watch/pod-watch-tick.ts';
import { ReconcileTick } from '../reconcile/reconcile-tick.ts';
import type { TickGate } from './tick-gate.ts';

/** What a part gets in each tick. */
export interface PartContext {
  /** Aborts when the tick's work time is up or the invocation ends: finish what is under way. */
  stop: AbortSignal;
  /** Aborts when the invocation ends (its deadline, a crash): write nothing more. */
  halt: AbortSignal;
  /** The invocation's logger. */
  log: Logger;
  /** The tick's fencing token (tick-slot.ts); absent in the keeper, which runs the heartbeat only. */
  fence?: number;
}

/** One part's work in this tick. */
export interface PartWork {
  name: TickPartName;
  run(context: PartContext): Promise<unknown>;
}

/** What a tick runs: the heartbeat, started before the gate answers, and the rest once it has (TickParts). */
export interface TickWork {
  heartbeat(gate: Promise<TickGate>, names: readonly TickPartName[]): PartWork | undefined;
  work(gate: TickGate, names: readonly TickPartName[]): PartWork[];
}

/** The reconcile lock is renewed every tick: its TTL spans this many tick periods. */
export const RECONCILE_LOCK_TICKS = 3;

/**
 * The parts a tick runs (SVK_TICK_PARTS), built once per cold start and kept
 * across the invocations of the warm sandbox: what each learned (leases as
 * last written, bookmarks, the reconcile lock) saves requests in the next.
 */
export class TickParts implements TickWork {
  readonly #heartbeat: HeartbeatTick | undefined;
  readonly #podWatch: PodWatchTick | undefined;
  readonly #podStatus: PodStatusRounds | undefined;
  readonly #reconcile: ReconcileTick | undefined;

  constructor(deps: Dependencies, publisher: EventPublisher) {
    const { parts } = deps.config.tick;
    const periodMs = deps.config.node.leaseRenewIntervalMs;
    this.#heartbeat = parts.includes('heartbeat') ? new HeartbeatTick(deps) : undefined;
    this.#podWatch = parts.includes('pod-watch') ? new PodWatchTick(deps, publisher) : undefined;
    this.#podStatus = parts.includes('pod-status') ? new PodStatusRounds(deps) : undefined;
    this.#reconcile = parts.includes('reconcile')
      ? new ReconcileTick(deps, {
          lockTtlMs: Math.max(deps.config.lock.ttlMs, RECONCILE_LOCK_TICKS * periodMs),
        })
      : undefined;
  }

  /**
   * The heartbeat's work in this tick, when it is among `names`: it renews
   * the leases at once and waits for `gate` only for the rest
   * (heartbeat-tick.ts), so it starts before the gate has answered.
   */
  heartbeat(gate: Promise<TickGate>, names: readonly TickPartName[]): PartWork | undefined {
    const heartbeat = this.#heartbeat;
    if (!heartbeat || !names.includes('heartbeat')) return undefined;
    return { name: 'heartbeat', run: ({ stop, log }) => heartbeat.run(stop, log, gate) };
  }

  /**
   * The rest of this tick's work among `names`, once the gate answered:
   * with the gate open, pod-watch, pod-status and the reconciler; refused
   * or unreachable, none (they write state of ours that must be fenced).
   */
  work(gate: TickGate, names: readonly TickPartName[]): PartWork[] {
    const work: PartWork[] = [];
    if (gate !== 'act') return work;
    const { podWatch, podStatus, reconcile } = {
      podWatch: this.#podWatch,
      podStatus: this.#podStatus,
      reconcile: this.#reconcile,
    };
    if (podWatch && names.includes('pod-watch')) {
      work.push({
        name: 'pod-watch',
        run: ({ stop, halt, log, fence }) => podWatch.run({ stop, halt, log, fence }),
      });
    }
    if (podStatus && names.includes('pod-status')) {
      work.push({ name: 'pod-status', run: ({ stop, log }) => podStatus.round(stop, log) });
    }
    if (reconcile && names.includes('reconcile')) {
      work.push({ name: 'reconcile', run: ({ stop, log }) => reconcile.run(stop, log) });
    }
    return work;
  }
}
