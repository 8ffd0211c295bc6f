import type { Dependencies } from '../app/dependencies.ts';
import type { Clock } from '../clock.ts';
import type { Invocation } from '../invocation.ts';
import type { StateTable } from '../state/dynamodb.ts';
import { releaseLessThan } from './release.ts';
import { RunningReleaseStore } from './running-releases.ts';
import { type ReconcilerStatus, ReconcilerStatusStore } from './status.ts';

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
 * Seed 004's WaitReady as a decision: may a function of `own` release act on
 * the state `status` describes? Unlike the seed, no status (no reconcile has
 * completed yet) lets everyone act: scheduled functions cannot wait for the
 * reconciler, and before a first status nothing has restricted anything. A
 * `working` status does not block either (seed: a release compatible with
 * both the old and the new state keeps running while reconciling).
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

/** What a gated entry point returns instead of acting. */
export interface ReleaseRefused {
  refused: true;
  release: string;
  reason: string;
}

export interface ReleaseGateOptions {
  table: StateTable;
  clock: Clock;
  own: OwnRelease;
  /** How long one record keeps this release counted as running; longer than the longest invocation. */
  recordTtlMs: number;
}

/**
 * Checks, at the start of an invocation, whether this release may act: first
 * records that the release runs (so that a reconciler restricting the status
 * after this point sees it), then reads the status. A reconciler writes the
 * status before it reads the running releases, so of the two, one always sees
 * the other. One per cold start; records are refreshed every quarter TTL.
 */
export class ReleaseGate {
  private readonly statuses: ReconcilerStatusStore;
  private readonly releases: RunningReleaseStore;
  private recordedUntil = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: ReleaseGateOptions) {
    this.statuses = new ReconcilerStatusStore(options.table);
    this.releases = new RunningReleaseStore(options.table);
  }

  async check(functionName: string): Promise<GateDecision> {
    const { clock, own, recordTtlMs } = this.options;
    const now = clock.now();
    // Re-record well before the recorded expiry, so no invocation runs uncounted.
    if (now >= this.recordedUntil - (recordTtlMs * 3) / 4) {
      await this.releases.record(own.release, functionName, now, recordTtlMs);
      this.recordedUntil = now + recordTtlMs;
    }
    return decideGate(await this.statuses.get(), own);
  }
}

const gates = new WeakMap<Dependencies, ReleaseGate>();

/** The gate of a cold start's dependencies (built on first use). */
export function releaseGateOf(deps: Dependencies, options: { reconciler?: boolean } = {}): ReleaseGate {
  let gate = gates.get(deps);
  if (!gate) {
    const { release, gating } = deps.config;
    gate = new ReleaseGate({
      table: deps.table,
      clock: deps.clock,
      own: {
        release,
        ...(options.reconciler ? {} : { requiredReconcilerRelease: gating.requiredReconcilerRelease }),
      },
      recordTtlMs: gating.releaseRecordTtlMs,
    });
    gates.set(deps, gate);
  }
  return gate;
}

/**
 * Runs `act` only if this release may act under the reconciler status (the
 * one line every handler adds); otherwise logs why and returns a refusal
 * without doing anything else.
 */
export async function whenReleaseMayAct<T>(
  deps: Dependencies,
  invocation: Invocation,
  act: (deps: Dependencies, invocation: Invocation) => Promise<T>,
  options: { reconciler?: boolean } = {},
): Promise<T | ReleaseRefused> {
  const decision = await releaseGateOf(deps, options).check(invocation.functionName);
  if (!decision.act) {
    deps.log
      .child({ requestId: invocation.requestId })
      .warn(
        { release: deps.config.release, reason: decision.reason },
        'release may not act under the reconciler status: doing nothing',
      );
    return { refused: true, release: deps.config.release, reason: decision.reason };
  }
  return act(deps, invocation);
}

export function isReleaseRefused(value: unknown): value is ReleaseRefused {
  return typeof value === 'object' && value !== null && 'refused' in value && value.refused === true;
}
