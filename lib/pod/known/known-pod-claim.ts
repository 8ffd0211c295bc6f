/**
 * A pod-sync invocation's exclusive right to call the provider's create or
 * update for one pod. Taken (conditional on the record's version) before the
 * call and turned into `appliedHash` after it, so that of several deliveries
 * of the same change only one calls the provider; the others wait for it.
 * A claimant that crashed is taken over once the claim has expired
 * ({@link isClaimLive}) or a waiter has watched it unchanged for a whole
 * claim on its own monotonic clock (PodReconciler).
 */
export interface KnownPodClaim {
  /** Unique per claim: completing or releasing it requires this token. */
  token: string;
  /** Who holds it (request id), for logs. */
  owner: string;
  /** The spec/metadata hash being applied. */
  hash: string;
  /** ISO wall-clock time, on the claimant's clock, after which others may take the claim over. */
  until: string;
}

/**
 * How far apart two invocations' wall clocks may be while a mark one of them
 * wrote (a claim's `until`, a status push's `pushUntil`) is judged on
 * another's clock. The claimant cuts its provider call off a whole claim
 * after it started to claim, on its monotonic clock; a reader whose wall
 * clock runs up to this much ahead of the claimant's still waits until
 * then. Lambda's clocks are kept by the Amazon Time Sync Service, well
 * within it; the cost is that a crashed claimant's claim, when nobody
 * watched it expire, is taken over this much later.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 30_000;

/** True while a mark written with this ISO `until` on another invocation's clock may still be in force at `nowMs`. */
export function isMarkLive(until: string | undefined, nowMs: number): boolean {
  return until !== undefined && Date.parse(until) + CLOCK_SKEW_ALLOWANCE_MS > nowMs;
}

/** True while another invocation's claim keeps everyone else from calling the provider. */
export function isClaimLive(claim: KnownPodClaim | undefined, nowMs: number): claim is KnownPodClaim {
  return claim !== undefined && isMarkLive(claim.until, nowMs);
}

/** The wall-clock time (ISO) before which a claim's `until` no longer counts ({@link isClaimLive}), for conditional writes. */
export function claimExpiredBefore(nowMs: number): string {
  return new Date(nowMs - CLOCK_SKEW_ALLOWANCE_MS).toISOString();
}
