import type { BaseDependencies } from '../app/dependencies.ts';
import type { Clock } from '../clock.ts';
import { type ReconcilerStatus, ReconcilerStatusStore } from './reconciler-status.ts';
import { releaseLessThan } from './release.ts';
import { RunningReleaseStore } from './running-releases.ts';

/** What a function knows about its own release. */
export interface OwnRelease {
  release: string;
  /**
   * The reconciled state must come from a reconciler of at least this
   * release. Undefined for the reconciler itself: it is the one that brings
   * the state up to its own release, so it must not wait for it.
   */
  requiredReconcilerRelease?: string;
}

export type GateDecision = { act: true; reason: string } | { act: false; reason: string };

/**
 * WaitReady of Monogon's reconciler as a decision: may a function of `own`
 * release act on the state `status` describes? Unlike WaitReady, no status
 * (no reconcile has completed yet) lets everyone act: scheduled functions
 * cannot wait for the reconciler, and before a first status nothing has
 * restricted anything. A `working` status does not block either: a release
 * compatible with both the old and the new state keeps running while the
 * reconciler works.
 */
export function decideGate(status: ReconcilerStatus | undefined, own: OwnRelease): GateDecision {
  if (!status) return { act: true, reason: 'no reconciler status yet' };
  if (releaseLessThan(own.release, status.minCompatibleRelease)) {
    return {
      act: false,
      reason:
        `release ${own.release} is below the minimum compatible release ${status.minCompatibleRelease} ` +
        `of the reconciled state (reconciler ${status.version})`,
    };
  }
  const required = own.requiredReconcilerRelease;
  if (required !== undefined && releaseLessThan(status.version, required)) {
    return {
      act: false,
      reason: `the reconciled state comes from release ${status.version}, below the release ${required} this release requires`,
    };
  }
  return { act: true, reason: `compatible with the reconciled state of release ${status.version}` };
}

/** What a gated invocation returns instead of acting (lib/handler's releaseGate middleware). */
export interface ReleaseRefused {
  refused: true;
  release: string;
  reason: string;
}

export interface ReleaseGateOptions {
  /** The reconciler status item. */
  statuses: Pick<ReconcilerStatusStore, 'get'>;
  /** The running-release records. */
  releases: Pick<RunningReleaseStore, 'record'>;
  clock: Clock;
  own: OwnRelease;
  /** How long one record keeps this release counted as running; longer than the longest invocation. */
  recordTtlMs: number;
  /**
   * How long a status read that lets this release act is reused by later
   * checks of the same cold start; 0 reads it on every check. Must stay well
   * below three quarters of `recordTtlMs` (see {@link ReleaseGate}).
   */
  statusCacheMs?: number;
}

/**
 * Checks, at the start of an invocation, whether this release may act: first
 * records that the release runs (so that a reconciler restricting the status
 * after this point sees it), then reads the status. A reconciler writes the
 * status before it reads the running releases, so of the two, one always sees
 * the other. One per cold start; records are refreshed every quarter TTL.
 *
 * ## Reusing the status read (statusCacheMs)
 *
 * pod-sync runs twice per pod, so reading the status on every check costs a
 * GetItem per invocation. A status that lets this release act is therefore
 * reused for `statusCacheMs` (measured on the monotonic clock from the start
 * of the read); the release is still recorded on every check. Why
 * this cannot let a release act on state it is incompatible with:
 *
 * - A status stops letting release R act only through the reconciler's
 *   `restrict` transition (raising the minimum, or lowering the version,
 *   which a leader does only when no newer release runs). The leader writes
 *   it only after it has seen no unexpired record of R, and reconciles only
 *   after seeing none again after the write.
 * - Every check records R, or finds R's record valid for at least three
 *   quarters of the record TTL more, before it reads the status. So a read
 *   that a sandbox made at time t is covered by a record of R that expires no
 *   earlier than t + ¾ TTL: a leader that saw no record of R did so after
 *   t + ¾ TTL, and its status write and its reconcile came later still.
 * - A check that reuses that read happens before t + statusCacheMs, which is
 *   well before t + ¾ TTL (config keeps the cache at most half the TTL, the
 *   margin covering clock skew between the sandbox and the leader). So it
 *   happens before the leader could have restricted the status: the reused
 *   status is the one it would have read afresh, and R's record, refreshed by
 *   this check, again holds the leader back until R's invocation has ended.
 *
 * The first status ever (the `none` transition) is written without that
 * wait, with or without the cache; it only restricts a release below the
 * first reconciler's own minimum, which a first deployment does not run.
 *
 * Defaults: 10 s of cache against a 300 s record TTL. A refusal is never
 * reused: a release waiting for a newer reconciler acts as soon as the
 * status allows it, and refusing costs nothing but the read.
 */
export class ReleaseGate {
  private recordedUntil = Number.NEGATIVE_INFINITY;
  /** The last status read that let this release act, and when that read started (monotonic). */
  private cached: { status: ReconcilerStatus | undefined; readAt: number } | undefined;
  /** A read in flight, shared by concurrent checks of this cold start. */
  private reading: Promise<{ status: ReconcilerStatus | undefined; readAt: number }> | undefined;

  constructor(private readonly options: ReleaseGateOptions) {}

  async check(functionName: string): Promise<GateDecision> {
    const { clock, own, recordTtlMs, releases } = this.options;
    const now = clock.now();
    // Re-record well before the recorded expiry, so no invocation runs uncounted.
    if (now >= this.recordedUntil - (recordTtlMs * 3) / 4) {
      await releases.record(own.release, functionName, now, recordTtlMs);
      this.recordedUntil = now + recordTtlMs;
    }
    return this.decide();
  }

  private async decide(): Promise<GateDecision> {
    const { clock, own, statusCacheMs = 0 } = this.options;
    const cached = this.cached;
    if (cached && clock.monotonic() - cached.readAt < statusCacheMs) return decideGate(cached.status, own);
    // A read in flight started once this sandbox's record was in place: joining it is as good as reading.
    if (!this.reading) {
      this.reading = this.read().finally(() => {
        this.reading = undefined;
      });
    }
    const read = await this.reading;
    const decision = decideGate(read.status, own);
    if (decision.act && statusCacheMs > 0) {
      if (!this.cached || this.cached.readAt < read.readAt) this.cached = read;
    } else if (!decision.act) {
      this.cached = undefined;
    }
    return decision;
  }

  private async read(): Promise<{ status: ReconcilerStatus | undefined; readAt: number }> {
    const readAt = this.options.clock.monotonic();
    return { status: await this.options.statuses.get(), readAt };
  }
}

const gates = new WeakMap<BaseDependencies, ReleaseGate>();

/** The gate of a cold start's dependencies (built on first use). */
export function releaseGateOf(deps: BaseDependencies, options: { reconciler?: boolean } = {}): ReleaseGate {
  let gate = gates.get(deps);
  if (!gate) {
    const { release, gating } = deps.config;
    gate = new ReleaseGate({
      statuses: new ReconcilerStatusStore(deps.table, deps.lockStore),
      releases: new RunningReleaseStore(deps.table),
      clock: deps.clock,
      own: {
        release,
        ...(options.reconciler ? {} : { requiredReconcilerRelease: gating.requiredReconcilerRelease }),
      },
      recordTtlMs: gating.releaseRecordTtlMs,
      statusCacheMs: gating.statusCacheMs,
    });
    gates.set(deps, gate);
  }
  return gate;
}

export function isReleaseRefused(value: unknown): value is ReleaseRefused {
  return typeof value === 'object' && value !== null && 'refused' in value && value.refused === true;
}
