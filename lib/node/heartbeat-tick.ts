import type { Dependencies } from '../app/dependencies.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { settledValues } from '../lock/leader-loop.ts';
import type { Logger } from '../log/logger.ts';
import { NodeConfigController } from '../node-config/node-config-controller.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import { buildNodeController, keepTiming } from './heartbeat-entry.ts';
import type { NodeController, TickResult } from './node-controller.ts';

/**
 * How a tick drives the nodes: `full` when the state store answers (node
 * config, ping, lease, labels and taints, status when changed or due);
 * `keep-alive` when it cannot be reached (the lease only: a kubelet's
 * liveness depends on no database).
 */
export type HeartbeatTickMode = 'full' | 'keep-alive';

/**
 * The heartbeat driven by ticks: every node's controller is built once per
 * cold start and kept across the ticks of the warm sandbox, so that a
 * renewal is one request (the lease as last written) and status goes out
 * only when it changed or is due. Ticks never overlap (one message group),
 * so no lock is needed: a second renewal of a Lease, by a duplicate tick, is
 * harmless. Intervals and lease duration hold for the sandbox's life; the
 * tick period itself is the queue's delivery delay.
 */
export class HeartbeatTick {
  readonly #deps: Dependencies;
  readonly #nodeConfig: NodeConfigController;
  /** Built at the first tick, with the intervals and lease duration of the config in use then. */
  #controllers: NodeController[] | undefined;
  #timing: NodeSettings | undefined;

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
  async run(stop: AbortSignal, log: Logger, mode: HeartbeatTickMode): Promise<TickResult[]> {
    const { config, metrics, nodeProvider } = this.#deps;
    const decision = mode === 'full' ? await this.#nodeConfig.resolve() : undefined;
    // The tick period is the queue's delay; the other intervals and the lease duration follow
    // the config in use when the sandbox started, as a continuous heartbeat's follow its invocation's.
    this.#timing ??= decision?.settings ?? config.node;
    const timing = this.#timing;
    this.#controllers ??= config.nodeNames.map((name) =>
      buildNodeController(this.#deps, { name, settings: timing, log }),
    );
    const controllers = this.#controllers;
    for (const c of controllers) c.setLogger(log.child({ node: c.name }));
    if (decision) {
      nodeProvider.configure?.(decision.settings);
      for (const c of controllers) c.configure(keepTiming(decision.settings, timing), [decision.condition]);
    }
    const results = settledValues(
      await mapSettledLimit(controllers, config.heartbeat.maxParallel, (c) =>
        mode === 'full' ? c.tick(stop) : c.keepAlive(stop),
      ),
      controllers.map((c) => c.name),
      log,
      stop,
      'node heartbeat failed; retrying on the next tick',
    );
    for (const r of results) {
      if (r.renewalLagMs !== undefined) metrics.leaseRenewalLag(r.node, r.renewalLagMs);
    }
    return results;
  }
}
