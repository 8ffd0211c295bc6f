import type { NodeSettings } from '../config/node-settings.ts';
import { runWithTimeout } from '../deadline.ts';
import { releaseRefusal } from '../handler/release-gate.ts';
import { type Invocation, invocationLog } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import { type HeartbeatOptions, type HeartbeatResult, runHeartbeat } from '../node/heartbeat-loop.ts';
import { NodeController } from '../node/node-controller.ts';
import { NodeLease } from '../node/node-lease.ts';
import type { NodeRoundResult } from '../node/round-result.ts';
import type { Decision } from '../node-config/decision.ts';
import { NodeConfigController } from '../node-config/node-config-controller.ts';
import type { ReleaseRefused } from '../release/gate.ts';
import type { Dependencies } from './dependencies.ts';

/** How long a resolution of the node config (DynamoDB checkpoints) may take before what is in hand is used. */
export const RESOLVE_BUDGET_MS = 3_000;

export interface NodeControllerSpec {
  name: string;
  /** The node's settings; its Lease's duration is `settings.leaseDurationSeconds`. */
  settings: NodeSettings;
  /** The invocation's logger; the node's lines add `node`. */
  log: Logger;
}

/**
 * One virtual node's controller and the Lease it renews, wired together the
 * same way wherever a node is driven (the heartbeat, the reconciler's
 * registration): on clients of their own, so that the node's request count
 * is theirs alone, and with a lease that registers the Node again before it
 * recreates itself (the garbage collector deletes the Lease with its Node).
 */
export function buildNodeController(
  deps: Pick<Dependencies, 'kube' | 'nodeProvider' | 'clock'>,
  spec: NodeControllerSpec,
): NodeController {
  const kube = deps.kube.withOwnCount();
  const log = spec.log.child({ node: spec.name });
  let controller: NodeController | undefined;
  const lease = new NodeLease({
    kube,
    nodeName: spec.name,
    durationSeconds: spec.settings.leaseDurationSeconds,
    clock: deps.clock,
    log,
    beforeRecreate: () => controller?.ensureRegistered() ?? Promise.resolve(),
  });
  controller = new NodeController({
    name: spec.name,
    settings: spec.settings,
    provider: deps.nodeProvider,
    kube,
    lease,
    clock: deps.clock,
    log,
  });
  return controller;
}

/**
 * `settings` with the intervals and lease duration of `timing`: a node config
 * that changes them takes effect with the next set of controllers (a new
 * invocation, or a new sandbox at the tick cadence).
 */
export function keepTiming(settings: NodeSettings, timing: NodeSettings): NodeSettings {
  return {
    ...settings,
    leaseDurationSeconds: timing.leaseDurationSeconds,
    leaseRenewIntervalMs: timing.leaseRenewIntervalMs,
    statusIntervalMs: timing.statusIntervalMs,
    pingIntervalMs: timing.pingIntervalMs,
  };
}

/**
 * The nodes a heartbeat drives, at either cadence: every configured node's
 * controller, built at the first {@link open} with the node config in use
 * then (local or assigned, lib/node-config/), whose intervals and lease
 * duration hold for the controllers' life (an invocation, or a warm
 * sandbox at the tick cadence); labels, taints, capacity and ConfigOK
 * follow each {@link configure}.
 */
export class HeartbeatNodes {
  readonly #deps: Dependencies;
  readonly #nodeConfig: NodeConfigController;
  #controllers: NodeController[] | undefined;
  #timing: NodeSettings | undefined;
  /** The node config as last resolved, and when (monotonic). */
  #decision: Decision | undefined;
  #resolvedAt = Number.NEGATIVE_INFINITY;

  constructor(deps: Dependencies, log: Logger) {
    const { config } = deps;
    this.#deps = deps;
    this.#nodeConfig = new NodeConfigController({
      ...(config.nodeConfig.source ? { source: config.nodeConfig.source } : {}),
      local: config.node,
      trialMs: config.nodeConfig.trialMs,
      core: deps.kube.core,
      table: deps.table,
      clock: deps.clock,
      log,
    });
  }

  /** The intervals and lease duration of the controllers (the local config's before the first open). */
  get timing(): NodeSettings {
    return this.#timing ?? this.#deps.config.node;
  }

  /**
   * The controllers, logging to `log` from now on; the first call resolves
   * the node config (never throws: with DynamoDB down it answers from the
   * local config once its reads are cut off) and builds them, applying
   * nothing yet: that is {@link configure}'s.
   */
  async open(log: Logger): Promise<readonly NodeController[]> {
    if (!this.#controllers) {
      const decision = await this.#resolve();
      const timing = decision.settings;
      this.#timing = timing;
      this.#controllers = this.#deps.config.nodeNames.map((name) =>
        buildNodeController(this.#deps, { name, settings: timing, log }),
      );
    }
    for (const c of this.#controllers) c.setLogger(log.child({ node: c.name }));
    return this.#controllers;
  }

  /**
   * Applies the node config to the provider and the controllers: the one in
   * hand when it was resolved less than `maxAgeMs` ago, else resolved again.
   */
  async configure(maxAgeMs: number): Promise<void> {
    const fresh = this.#decision && this.#deps.clock.monotonic() - this.#resolvedAt < maxAgeMs;
    const decision = fresh && this.#decision ? this.#decision : await this.#resolve();
    this.#deps.nodeProvider.configure?.(decision.settings);
    const timing = this.timing;
    for (const c of this.#controllers ?? [])
      c.configure(keepTiming(decision.settings, timing), [decision.condition]);
  }

  /** Counts a round's results: each node's renewal lag, and the nodes renewed without the lock. */
  report(results: readonly NodeRoundResult[], degraded: boolean): void {
    const { metrics } = this.#deps;
    if (degraded) metrics.degradedHeartbeat(results.filter((r) => r.leaseRenewed).length);
    for (const r of results) {
      if (r.renewalLagMs !== undefined) metrics.leaseRenewalLag(r.node, r.renewalLagMs);
    }
  }

  async #resolve(): Promise<Decision> {
    const decision = await runWithTimeout(RESOLVE_BUDGET_MS, () => this.#nodeConfig.resolve());
    this.#decision = decision;
    this.#resolvedAt = this.#deps.clock.monotonic();
    return decision;
  }
}

/**
 * The heartbeat function's one entry point: stand by for the heartbeat lock,
 * then run a heartbeat round over every configured node each renew interval
 * until shortly before the invocation's deadline (lib/node/heartbeat-loop.ts,
 * which also keeps the leases renewed while DynamoDB cannot be reached).
 * The node config is resolved again before a holder's round when the one in
 * hand is older than half an interval. The release gate is this function's
 * own (the handler does not wait for it), read before the lock and not
 * before the whole invocation, so that a DynamoDB outage never keeps the
 * leases from being renewed.
 */
export async function heartbeat(
  deps: Dependencies,
  invocation: Invocation,
  hooks: Pick<HeartbeatOptions, 'onRound'> = {},
): Promise<HeartbeatResult | ReleaseRefused> {
  const { config, clock } = deps;
  const log = invocationLog(deps.log, invocation);
  const nodes = new HeartbeatNodes(deps, log);
  const controllers = await nodes.open(log);
  const { timing } = nodes;
  const freshFor = timing.leaseRenewIntervalMs / 2;
  await nodes.configure(freshFor);
  const result = await runHeartbeat({
    lockStore: deps.lockStore,
    nodes: controllers,
    clock,
    log,
    invocation,
    renewIntervalMs: timing.leaseRenewIntervalMs,
    lockTtlMs: config.lock.ttlMs,
    lockPollMs: config.lock.pollMs,
    maxParallel: config.heartbeat.maxParallel,
    nodeTimeoutMs: (timing.leaseDurationSeconds * 1_000) / 2,
    stopBeforeDeadlineMs: config.heartbeat.stopBeforeDeadlineMs,
    releaseGate: () => releaseRefusal(deps, invocation),
    onLockTakeover: (lock) => deps.metrics.lockTakeover(lock),
    onRound: (results, degraded) => {
      nodes.report(results, degraded);
      hooks.onRound?.(results, degraded);
    },
    // A standby resolved when it started, maybe a minute ago; the holder's rounds re-read.
    beforeRound: () => nodes.configure(freshFor),
  });
  return result.refusal ?? result;
}
