import { runWithTimeout } from '../deadline.ts';
import { settledValues } from '../lock/leader-loop.ts';
import type { Logger } from '../log/logger.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import { isLeaseMissing, type LeaseRenewal } from './node-lease.ts';
import type { NodeRoundResult } from './round-result.ts';

/** One node as a heartbeat round drives it (a NodeController). */
export interface HeartbeatNode {
  readonly name: string;
  /** The full round: lease (unless `renewed` did it), ping, labels and taints, status when changed or due. */
  round(signal?: AbortSignal, renewed?: LeaseRenewal): Promise<NodeRoundResult>;
  /** The lease and the StateStoreUnavailable condition only, registering nothing. */
  keepAlive(
    signal: AbortSignal | undefined,
    unavailableSince: Date,
    renewed?: LeaseRenewal,
  ): Promise<NodeRoundResult>;
}

/**
 * What a round may do beyond the lease, which it always renews:
 * - `full`: everything (the lock held, or the release gate open);
 * - `keep-alive`: the state table cannot be reached since `since`: the
 *   lease and the StateStoreUnavailable condition, so Ready stays True
 *   while nothing that must happen once is done;
 * - `renew-only`: another release is in charge: the lease as renewed
 *   already (`renewals`), nothing else.
 */
export type HeartbeatMode = { kind: 'full' } | { kind: 'keep-alive'; since: Date } | { kind: 'renew-only' };

export interface HeartbeatRoundOptions {
  nodes: readonly HeartbeatNode[];
  mode: HeartbeatMode;
  /** Each node's lease renewal, when the driver renewed them first (same order as `nodes`). */
  renewals?: readonly LeaseRenewal[];
  /** Ends the round: finish what is under way. */
  stop: AbortSignal;
  log: Logger;
  maxParallel: number;
  /**
   * Longest full round of one node (its lease is renewed first in it): long
   * enough for a slow API server, short enough that the next round's
   * renewal comes well within the lease's duration.
   */
  nodeTimeoutMs: number;
}

/**
 * One heartbeat round over every node, whatever drives it (the continuous
 * heartbeat's holder each renew interval, or a tick), with bounded
 * parallelism: a node whose round failed is logged (unless stopped) and
 * left out of the results.
 */
export async function heartbeatRound(o: HeartbeatRoundOptions): Promise<NodeRoundResult[]> {
  const { mode, stop, renewals } = o;
  const indexed = o.nodes.map((node, i) => ({ node, renewed: renewals?.[i] }));
  const settled = await mapSettledLimit(indexed, o.maxParallel, ({ node, renewed }) => {
    if (mode.kind === 'full') return runWithTimeout(o.nodeTimeoutMs, () => node.round(stop, renewed));
    if (mode.kind === 'keep-alive') return node.keepAlive(stop, mode.since, renewed);
    return Promise.resolve(renewedOnly(node.name, renewed));
  });
  return settledValues(
    settled,
    o.nodes.map((n) => n.name),
    o.log,
    stop,
    mode.kind === 'full'
      ? 'node heartbeat failed; retrying on the next round'
      : 'lease renewal without the lock failed; retrying on the next round',
  );
}

/** A renew-only round's result: a Node gone is registered again by the release in charge, not by this one. */
function renewedOnly(node: string, renewed: LeaseRenewal | undefined): NodeRoundResult {
  if (!renewed) return { node, leaseRenewed: false, statusWritten: false, requests: 0 };
  if (renewed.error !== undefined && !isLeaseMissing(renewed.error)) throw renewed.error;
  return { node, leaseRenewed: renewed.leaseRenewed, statusWritten: false, requests: renewed.requests };
}
