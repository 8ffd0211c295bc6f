import type { Dependencies } from '../app/dependencies.ts';
import { releaseRefusal } from '../handler/release-gate.ts';
import type { Invocation } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';

/**
 * What a tick may do: `act` (the release gate lets this release act),
 * `refused` (it does not: nothing that writes is done), or `unreachable`
 * (the state table did not answer in time: only what needs no state is done,
 * the Lease renewals that keep the nodes Ready).
 */
export type TickGate = 'act' | 'refused' | 'unreachable';

/** The longest a tick waits for the release gate (a DynamoDB write and read) before it counts the table as unreachable. */
export const GATE_BUDGET_MS = 3_000;

/**
 * The release gate of a tick, cut off after `budgetMs`: a hung or failing
 * DynamoDB must not hold up the lease renewals behind it. The gate's own
 * requests may go on in the background; their answer is not waited for.
 */
export async function tickGate(
  deps: Dependencies,
  invocation: Invocation,
  log: Logger,
  budgetMs = GATE_BUDGET_MS,
): Promise<TickGate> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      releaseRefusal(deps, invocation).then((refusal): TickGate => (refusal ? 'refused' : 'act')),
      deps.clock.sleep(budgetMs, timer.signal).then((): TickGate => {
        log.warn({ budgetMs }, 'state table did not answer: renewing the leases only');
        return 'unreachable';
      }),
    ]);
  } catch (err) {
    log.warn({ err }, 'state table failed: renewing the leases only');
    return 'unreachable';
  } finally {
    timer.abort();
  }
}
