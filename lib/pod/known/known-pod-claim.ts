/**
 * A pod-sync invocation's exclusive right to call the provider's create or
 * update for one pod. Taken (conditional on the record's version) before the
 * call and turned into `appliedHash` after it, so that of several deliveries
 * of the same change only one calls the provider; the others wait for it.
 * A claimant that crashed is taken over once `until` has passed.
 */
export interface KnownPodClaim {
  /** Unique per claim: completing or releasing it requires this token. */
  token: string;
  /** Who holds it (request id), for logs. */
  owner: string;
  /** The spec/metadata hash being applied. */
  hash: string;
  /** ISO wall-clock time after which others may take the claim over. */
  until: string;
}

/** True while another invocation's claim keeps everyone else from calling the provider. */
export function isClaimLive(claim: KnownPodClaim | undefined, nowMs: number): claim is KnownPodClaim {
  return claim !== undefined && Date.parse(claim.until) > nowMs;
}
