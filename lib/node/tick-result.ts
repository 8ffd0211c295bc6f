/** What one tick did, for logs, metrics and tests. */
export interface TickResult {
  node: string;
  leaseRenewed: boolean;
  statusWritten: boolean;
  pingError?: string;
  /** API requests sent so far through this node's clients (its controller's and its lease's). */
  requests: number;
  /** Steps that failed this tick (logged); the next tick tries again. */
  errors?: string[];
  /**
   * How long the lease went without renewal: from the renewal before this
   * tick's (whoever wrote it) to this tick's, or to now when this tick's
   * failed. Absent when no earlier renewal is known (a lease just created).
   */
  renewalLagMs?: number;
}
