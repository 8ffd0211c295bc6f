/** How a reconcile of one pod key ends: an outcome, or an error that has the event retried. */

/** Where a reconcile ended. */
export type SyncOutcome =
  | 'created'
  | 'updated'
  | 'create-failed'
  | 'deleted-in-provider'
  | 'force-deleted'
  | 'orphan-deleted'
  | 'absent'
  | 'not-ours'
  | 'skipped-terminal'
  | 'skipped-unchanged'
  | 'skipped-deleting'
  /** The event's hints said there was nothing to do (see POD_EVENT_HINTS). */
  | 'skipped-hinted';

/** What one reconcile did, for logs, metrics and tests. */
export interface SyncResult {
  key: string;
  outcome: SyncOutcome;
  /** The steps taken, in order, e.g. `['wait', 'apply:create']`. */
  steps: string[];
}

/** The pod could not be reconciled now; the event is retried and the reconcile then starts over. */
export class PodSyncRetryError extends Error {
  override readonly name = 'PodSyncRetryError';
  constructor(
    message: string,
    /** env: a referenced ConfigMap/Secret is missing; provider: the provider call failed; busy: another invocation's claim outlasted ours; conflict: too many concurrent writers. */
    readonly reason: 'env' | 'provider' | 'busy' | 'conflict',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
