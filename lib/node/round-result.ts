/** What one heartbeat round did for one node, for logs, metrics and tests. */
export interface NodeRoundResult {
  node: string;
  leaseRenewed: boolean;
  statusWritten: boolean;
  pingError?: string;
  /** API requests sent so far through this node's clients (its controller's and its lease's). */
  requests: number;
  /** Steps that failed this round (logged); the next round tries again. */
  errors?: string[];
  /**
   * How long the lease went without renewal: from the renewal before this
   * round's (whoever wrote it) to this round's, or to now when this round's
   * failed. Absent when no earlier renewal is known (a lease just created).
   */
  renewalLagMs?: number;
}
