import type { Dependencies } from '../app/dependencies.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { runWithTimeout } from '../deadline.ts';
import { releaseRefusal } from '../handler/release-gate.ts';
import type { Invocation } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import { NodeConfigController } from '../node-config/node-config-controller.ts';
import type { ReleaseRefused } from '../release/gate.ts';
import type { HeartbeatOptions, HeartbeatResult } from './heartbeat.ts';
import { runHeartbeat } from './heartbeat-loop.ts';
import { NodeController } from './node-controller.ts';
import { NodeLease } from './node-lease.ts';

/** How long a cold start waits for the node config (DynamoDB checkpoints) before using what it has. */
export const RESOLVE_BUDGET_MS = 3_000;

/**
 * The heartbeat function's one entry point: stand by for the heartbeat lock,
 * then keep every configured node registered, leased and reported until
 * shortly before the invocation's deadline. The node settings come from the
 * node config (local or assigned, lib/node-config/), resolved again before
 * every round: labels, taints, capacity and ConfigOK follow within a round;
 * intervals and the lease duration hold for the whole invocation. The
 * release gate is this function's own (the handler does not wait for it),
 * so that a DynamoDB outage never keeps the leases from being renewed
 * (heartbeat-loop.ts).
 */
export async function heartbeat(
  deps: Dependencies,
  invocation: Invocation,
  hooks: Pick<HeartbeatOptions, 'onTick'> = {},
): Promise<HeartbeatResult | ReleaseRefused> {
  const { config, clock, kube, table, nodeProvider, metrics } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const nodeConfig = new NodeConfigController({
    ...(config.nodeConfig.source ? { source: config.nodeConfig.source } : {}),
    local: config.node,
    trialMs: config.nodeConfig.trialMs,
    core: kube.core,
    table,
    clock,
    log,
  });
  // Never throws; with DynamoDB down it answers from the local config once its reads are cut off.
  const initial = await runWithTimeout(RESOLVE_BUDGET_MS, () => nodeConfig.resolve());
  let resolvedAt = clock.monotonic();
  const timing = initial.settings;
  const withTiming = (settings: NodeSettings): NodeSettings => keepTiming(settings, timing);
  const controllers = config.nodeNames.map((name) =>
    buildNodeController(deps, { name, settings: timing, log }),
  );
  const configure = (decision: typeof initial) => {
    nodeProvider.configure?.(decision.settings);
    for (const c of controllers) c.configure(withTiming(decision.settings), [decision.condition]);
  };
  configure(initial);
  const result = await runHeartbeat({
    lockStore: deps.lockStore,
    controllers,
    clock,
    log,
    invocation,
    renewIntervalMs: timing.leaseRenewIntervalMs,
    lockTtlMs: config.lock.ttlMs,
    lockPollMs: config.lock.pollMs,
    maxParallel: config.heartbeat.maxParallel,
    tickTimeoutMs: (timing.leaseDurationSeconds * 1_000) / 2,
    stopBeforeDeadlineMs: config.heartbeat.stopBeforeDeadlineMs,
    // Read before the lock, not before the whole invocation: the leases must not wait for it.
    releaseGate: () => releaseRefusal(deps, invocation),
    onLockTakeover: (lock) => metrics.lockTakeover(lock),
    onDegraded: (nodes) => metrics.degradedHeartbeat(nodes),
    onTick: (results) => {
      for (const r of results)
        if (r.renewalLagMs !== undefined) metrics.leaseRenewalLag(r.node, r.renewalLagMs);
      hooks.onTick?.(results);
    },
    beforeRound: async () => {
      // A standby resolved when it started, maybe a minute ago; the holder's rounds re-read.
      if (clock.monotonic() - resolvedAt < timing.leaseRenewIntervalMs / 2) return;
      configure(await nodeConfig.resolve());
      resolvedAt = clock.monotonic();
    },
  });
  return result.refusal ?? result;
}

/**
 * `settings` with the intervals and lease duration of `timing`: a node config
 * that changes them takes effect from the next invocation (the heartbeat's
 * loop runs on the timing it started with).
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
