import { buildNodeController, type Dependencies } from '../app/dependencies.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { runWithTimeout } from '../deadline.ts';
import { releaseRefusal } from '../handler/release-gate.ts';
import type { Invocation } from '../invocation.ts';
import { NodeConfigController } from '../node-config/node-config-controller.ts';
import type { ReleaseRefused } from '../release/gate.ts';
import { type HeartbeatOptions, type HeartbeatResult, keepTiming, RESOLVE_BUDGET_MS } from './heartbeat.ts';
import { runHeartbeat } from './heartbeat-loop.ts';

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
