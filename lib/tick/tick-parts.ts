import type { Dependencies } from '../app/dependencies.ts';
import { HeartbeatNodes } from '../app/heartbeat.ts';
import type { TickPartName } from '../config/env-variables.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { Logger } from '../log/logger.ts';
import { type HeartbeatMode, heartbeatRound } from '../node/heartbeat-round.ts';
import type { LeaseRenewal } from '../node/node-lease.ts';
import type { NodeRoundResult } from '../node/round-result.ts';
import { PodStatusRounds } from '../pod/status/pod-status-round.ts';
import { PodWatchTick } from '../pod/watch/pod-watch-tick.ts';
import { ReconcileTick } from '../reconcile/reconcile-tick.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import type { TickGate } from './tick-gate.ts';

/** What a part gets in each tick. */
export interface PartContext {
  /** Aborts when the tick's work time is up or the invocation ends: finish what is under way. */
  stop: AbortSignal;
  /** Aborts when the invocation ends (its deadline, a crash): write nothing more. */
  halt: AbortSignal;
  /** The invocation's logger. */
  log: Logger;
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

/**
 * The TTL of the locks the chain takes spans this many tick periods: the
 * reconcile lock, renewed every tick or two, and the nodes' watch locks,
 * taken anew every tick. Another owner takes one over after watching it
 * unchanged this long.
 */
export const CHAIN_LOCK_TICKS = 3;

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
    const lockTtlMs = Math.max(deps.config.lock.ttlMs, CHAIN_LOCK_TICKS * periodMs);
    this.#heartbeat = parts.includes('heartbeat') ? new HeartbeatTick(deps) : undefined;
    this.#podWatch = parts.includes('pod-watch')
      ? new PodWatchTick(deps, publisher, { lockTtlMs })
      : undefined;
    this.#podStatus = parts.includes('pod-status') ? new PodStatusRounds(deps) : undefined;
    this.#reconcile = parts.includes('reconcile') ? new ReconcileTick(deps, { lockTtlMs }) : undefined;
  }

  /**
   * The heartbeat's work in this tick, when it is among `names`: it renews
   * the leases at once and waits for `gate` only for the rest
   * ({@link HeartbeatTick}), so it starts before the gate has answered.
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
        run: ({ stop, halt, log }) => podWatch.run({ stop, halt, log }),
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

/**
 * The heartbeat at the tick cadence: one heartbeat round (heartbeat-round.ts)
 * a tick, over controllers built once per cold start and kept across the
 * ticks of the warm sandbox, so that a renewal is one request (the lease as
 * last written) and status goes out only when it changed or is due. Ticks
 * never overlap (one message group), so no lock is needed: a second renewal
 * of a Lease, by a duplicate tick, is harmless.
 *
 * Liveness without DynamoDB: each tick renews every node's Lease first,
 * while the release gate (a DynamoDB read) is still under way, and only
 * then learns from the gate which round to run. `act`: a full round, the
 * node config applied first. `unreachable` (the state table did not
 * answer): a keep-alive round, so Ready stays True while nothing that must
 * happen once is done. `refused` (another release is in charge): the
 * renewals only. Neither registers a Node: one deleted meanwhile stays
 * gone until a tick whose gate lets it act, since a registration is the
 * release in charge's to make, with the node config from the table, and an
 * operator's delete must not be undone by a release that may be superseded.
 */
export class HeartbeatTick {
  readonly #deps: Dependencies;
  readonly #nodes: HeartbeatNodes;
  /** Wall time since when the state table has not answered; undefined while it answers. */
  #unavailableSince: Date | undefined;

  constructor(deps: Dependencies) {
    this.#deps = deps;
    this.#nodes = new HeartbeatNodes(deps, deps.log);
  }

  async run(stop: AbortSignal, log: Logger, gate: Promise<TickGate>): Promise<NodeRoundResult[]> {
    const { config, clock } = this.#deps;
    const nodes = await this.#nodes.open(log);
    const { timing } = this.#nodes;
    const maxParallel = config.heartbeat.maxParallel;
    // Before the gate answers, a renewal may not register a Node (degraded or refused ticks register none).
    const renewals = (
      await mapSettledLimit(nodes, maxParallel, (c) => c.renewLease(stop, { register: false }))
    ).map(renewalOf);
    const answer = await gate;
    if (answer === 'act') await this.#nodes.configure(timing.leaseRenewIntervalMs / 2);
    if (answer !== 'unreachable') this.#unavailableSince = undefined;
    else this.#unavailableSince ??= new Date(clock.now());
    const since = this.#unavailableSince;
    const mode: HeartbeatMode =
      answer === 'act' ? { kind: 'full' } : since ? { kind: 'keep-alive', since } : { kind: 'renew-only' };
    const results = await heartbeatRound({
      nodes,
      mode,
      renewals,
      stop,
      log,
      maxParallel,
      nodeTimeoutMs: (timing.leaseDurationSeconds * 1_000) / 2,
    });
    this.#nodes.report(results, mode.kind === 'keep-alive');
    return results;
  }
}

/** A node's renewal as settled: an abort (the only thing renewLease throws) counts as a failed renewal. */
function renewalOf(settled: PromiseSettledResult<LeaseRenewal>): LeaseRenewal {
  if (settled.status === 'fulfilled') return settled.value;
  const error: unknown = settled.reason ?? new Error('no renewal');
  return { leaseRenewed: false, previousRenewal: undefined, requests: 0, error };
}
