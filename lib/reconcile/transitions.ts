import { type ReconcilerStatus, sameStatus } from '../release/reconciler-status.ts';
import { maxRelease, minRelease, releaseLessThan } from '../release/release.ts';
import type { ReleaseRange } from '../release/running-releases.ts';

/** What the leader's own release brings. */
export interface LeaderRelease {
  release: string;
  /** What the status says once this leader's reconcile is done. */
  minCompatibleRelease: string;
}

/**
 * The lead() of Monogon's reconciler, as a decision on the status found at
 * election:
 *
 * - none: no reconcile ever completed. Reconcile, then create the done status.
 * - leave: the status is already what this leader would write.
 * - mark-working: the status admits no release that would be incompatible
 *   with the state after this reconcile (this release is not older than the
 *   status's, and its minimum is not above the status's): only mark it
 *   working (`write` undefined when it already is).
 * - restrict: the status admits releases that this reconcile makes
 *   incompatible. Wait until none of them runs, then allow only what both
 *   the old and the new state accept (the lower version, the higher minimum),
 *   reconcile, and mark done.
 */
export type Transition =
  | { kind: 'none'; done: ReconcilerStatus }
  | { kind: 'leave'; done: ReconcilerStatus }
  | { kind: 'mark-working'; write?: ReconcilerStatus; done: ReconcilerStatus }
  | { kind: 'restrict'; write: ReconcilerStatus; done: ReconcilerStatus };

export function doneStatus(own: LeaderRelease): ReconcilerStatus {
  return { state: 'done', version: own.release, minCompatibleRelease: own.minCompatibleRelease };
}

export function decideTransition(status: ReconcilerStatus | undefined, own: LeaderRelease): Transition {
  const done = doneStatus(own);
  if (!status) return { kind: 'none', done };
  if (sameStatus(status, done)) return { kind: 'leave', done };
  const compatible =
    !releaseLessThan(own.release, status.version) &&
    !releaseLessThan(status.minCompatibleRelease, own.minCompatibleRelease);
  if (compatible) {
    return status.state === 'working'
      ? { kind: 'mark-working', done }
      : { kind: 'mark-working', write: { ...status, state: 'working' }, done };
  }
  return {
    kind: 'restrict',
    write: {
      state: 'working',
      version: minRelease(status.version, own.release),
      minCompatibleRelease: maxRelease(status.minCompatibleRelease, own.minCompatibleRelease),
    },
    done,
  };
}

/**
 * Whether a leader of `own` release may go on given the releases running now:
 * `newer` when a newer release runs (only the newest release leads, so it
 * steps down), `incompatible` while a release below its minimum compatible
 * release still runs (before restricting the status), else `clear`.
 */
export function releaseCheck(
  range: Pick<ReleaseRange, 'min' | 'max'>,
  own: LeaderRelease,
): {
  verdict: 'newer' | 'incompatible' | 'clear';
  release?: string;
} {
  if (releaseLessThan(own.release, range.max)) return { verdict: 'newer', release: range.max };
  if (releaseLessThan(range.min, own.minCompatibleRelease))
    return { verdict: 'incompatible', release: range.min };
  return { verdict: 'clear' };
}
