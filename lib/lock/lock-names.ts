/**
 * The name of every lock a deployment takes in its state table: the loops
 * that hold them and the status report that reads them name them from here.
 */

/** The lock that makes one invocation at a time the heartbeat holder for all nodes of a deployment. */
export const HEARTBEAT_LOCK = 'heartbeat';

/** The lock that makes one invocation at a time the pod-status holder for all nodes of a deployment. */
export const POD_STATUS_LOCK = 'pod-status';

/** The lock whose holder is the one reconciler of a deployment. */
export const RECONCILE_LOCK = 'reconcile';

/** The watch lock of one node. */
export function podWatchLockName(node: string): string {
  return `pod-watch#${node}`;
}

/** The locks a deployment of `nodeNames` uses. */
export function deploymentLockNames(nodeNames: readonly string[]): string[] {
  return [HEARTBEAT_LOCK, POD_STATUS_LOCK, RECONCILE_LOCK, ...nodeNames.map(podWatchLockName)];
}

/**
 * The owner the tick chain takes its locks as: one owner for the whole
 * chain, whose ticks never overlap (one SQS FIFO message group), so that
 * each tick takes its turn without waiting for the previous tick's TTL
 * (LockManager.advance), whichever sandbox runs it.
 */
export const TICK_CHAIN_OWNER = 'tick-chain';
