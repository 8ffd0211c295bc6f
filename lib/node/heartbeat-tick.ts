import { buildNodeController, type Dependencies } from '../app/dependencies.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { runWithTimeout } from '../deadline.ts';
import { settledValues } from '../lock/leader-loop.ts';
import type { Logger } from '../log/logger.ts';
import type { Decision } from '../node-config/decision.ts';
import { NodeConfigController } from '../node-config/node-config-controller.ts';
import type { TickGate } from '../tick/tick-gate.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import { keepTiming, RESOLVE_BUDGET_MS } from './heartbeat.ts';
import type { NodeController, TickResult } from './node-controller.ts';
import { isLeaseMissing, type LeaseRenewal } from './node-lease.ts';

/**
 * The heartbeat driven by ticks: every node's controller is built once per
 * cold start and kept across the ticks of the warm sandbox, so that a
 * renewal is one request (the lease as last written) and status goes out
 * only when it changed or is due. Ticks never overlap (one message group),
 * so no lock is needed: a second renewal of a Lease, by a duplicate tick, is
 * harmless. Intervals and lease duration hold for the sandbox's life; the
 * tick period itself is the queue's delivery delay.
 *
 * Liveness without DynamoDB: each tick renews every node's Lease first,
 * while the release gate (a DynamoDB read) is still under way, and only
 * then learns from the gate what else it may do. `act`: the node config,
 * ping, labels and taints, and status when changed or due. `unreachable`
 * (the state table did not answer): nothing more but the
 * StateStoreUnavailable condition, so Ready stays True while nothing that
 * must happen once is done. `refused` (another release is in charge): the
 * renewals only. Neither registers a Node: one deleted meanwhile stays gone
 * until a tick whose gate lets it act, since a registration is the release
 * in charge's to make, with the node config from the table, and an
 * operator's delete must not be undone by a release that may be superseded.
 * A cold start reads the node config (bounded, beside the gate, never
 * waiting for it) to build its controllers, then does the same.
 */
export class HeartbeatTick {
  readonly #deps: Dependencies;
  readonly #nodeConfig: NodeConfigController;
  /** Built at the first tick, with the intervals and lease duration of the config in use then. */
  #controllers: NodeController[] | undefined;
  #timing: NodeSettings | undefined;
  /** Wall time since when the state table has not answered; undefined while it answers. */
  #unavailableSince: Date | undefined;

  constructor(deps: Dependencies) {
    const { config } = deps;
    this.#deps = deps;
    this.#nodeConfig = new NodeConfigController({
      ...(config.nodeConfig.source ? { source: config.nodeConfig.source } : {}),
      local: config.node,
      trialMs: config.nodeConfig.trialMs,
      core: deps.kube.core,
      table: deps.table,
      clock: deps.clock,
      log: deps.log,
    });
  }

  /** One tick of every node, with bounded parallelism; a node whose tick failed is logged and left out. */
  async run(stop: AbortSignal, log: Logger, gate: Promise<TickGate>): Promise<TickResult[]> {
    const { config, metrics } = this.#deps;
    let decision: Decision | undefined;
    if (!this.#controllers) {
      // Never throws: with DynamoDB down it answers from the local config once its reads are cut off.
      decision = await runWithTimeout(RESOLVE_BUDGET_MS, () => this.#nodeConfig.resolve());
      this.#build(decision.settings, log);
    }
    const controllers = this.#controllers ?? [];
    for (const c of controllers) c.setLogger(log.child({ node: c.name }));
    const max = config.heartbeat.maxParallel;
    // Before the gate answers, a renewal may not register a Node (degraded or refused ticks register none).
    const renewals = await mapSettledLimit(controllers, max, (c) => c.renewLease(stop, { register: false }));
    const mode = await gate;
    if (mode === 'act') {
      decision ??= await runWithTimeout(RESOLVE_BUDGET_MS, () => this.#nodeConfig.resolve());
      this.#configure(decision);
    }
    if (mode !== 'unreachable') this.#unavailableSince = undefined;
    else this.#unavailableSince ??= new Date(this.#deps.clock.now());
    const since = this.#unavailableSince;
    const nodes = controllers.map((c, i) => ({ c, renewed: renewalOf(renewals[i]) }));
    const results = settledValues(
      await mapSettledLimit(nodes, max, async ({ c, renewed }) => {
        if (mode === 'act') return c.tick(stop, renewed);
        if (since) return c.keepAlive(stop, since, renewed);
        // A Node gone is registered again by the release in charge, not by a refused one.
        if (renewed.error !== undefined && !isLeaseMissing(renewed.error)) throw renewed.error;
        const { leaseRenewed, requests } = renewed;
        return { node: c.name, leaseRenewed, statusWritten: false, requests };
      }),
      controllers.map((c) => c.name),
      log,
      stop,
      'node heartbeat failed; retrying on the next tick',
    );
    if (since) metrics.degradedHeartbeat(results.filter((r) => r.leaseRenewed).length);
    for (const r of results) {
      if (r.renewalLagMs !== undefined) metrics.leaseRenewalLag(r.node, r.renewalLagMs);
    }
    return results;
  }

  /** The controllers of the sandbox, with the intervals and lease duration of `settings` for its life. */
  #build(settings: NodeSettings, log: Logger): void {
    // The tick period is the queue's delay; the other intervals and the lease duration follow
    // the config in use when the sandbox started, as a continuous heartbeat's follow its invocation's.
    const timing = settings;
    this.#timing = timing;
    this.#controllers = this.#deps.config.nodeNames.map((name) =>
      buildNodeController(this.#deps, { name, settings: timing, log }),
    );
  }

  #configure(decision: Decision): void {
    const timing = this.#timing ?? decision.settings;
    this.#deps.nodeProvider.configure?.(decision.settings);
    for (const c of this.#controllers ?? [])
      c.configure(keepTiming(decision.settings, timing), [decision.condition]);
  }
}

/** A node's renewal as settled: an abort (the only thing renewLease throws) counts as a failed renewal. */
function renewalOf(settled: PromiseSettledResult<LeaseRenewal> | undefined): LeaseRenewal {
  if (settled?.status === 'fulfilled') return settled.value;
  const error: unknown = settled?.reason ?? new Error('no renewal');
  return { leaseRenewed: false, previousRenewal: undefined, requests: 0, error };
}
