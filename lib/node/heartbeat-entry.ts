import type { Dependencies } from '../app/dependencies.ts';
import type { Invocation } from '../invocation.ts';
import { type HeartbeatOptions, type HeartbeatResult, runHeartbeat } from './heartbeat.ts';
import { NodeController } from './node-controller.ts';
import { NodeLease } from './node-lease.ts';

/**
 * The heartbeat function's one entry point: stand by for the heartbeat lock,
 * then keep every configured node registered, leased and reported until
 * shortly before the invocation's deadline.
 */
export function heartbeat(
  deps: Dependencies,
  invocation: Invocation,
  hooks: Pick<HeartbeatOptions, 'onTick'> = {},
): Promise<HeartbeatResult> {
  const { config, clock, kube, table, provider, metrics } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const controllers = config.nodeNames.map((name) => {
    const nodeLog = log.child({ node: name });
    let controller: NodeController | undefined;
    const lease = new NodeLease({
      core: kube.core,
      coordination: kube.coordination,
      nodeName: name,
      durationSeconds: config.node.leaseDurationSeconds,
      clock,
      log: nodeLog,
      beforeRecreate: () => controller?.ensureRegistered() ?? Promise.resolve(),
    });
    controller = new NodeController({
      name,
      settings: config.node,
      provider,
      core: kube.core,
      lease,
      clock,
      log: nodeLog,
    });
    return controller;
  });
  return runHeartbeat({
    table,
    controllers,
    clock,
    log,
    invocation,
    renewIntervalMs: config.node.leaseRenewIntervalMs,
    lockLeaseMs: config.lock.leaseMs,
    lockPollMs: config.lock.pollMs,
    maxParallel: config.heartbeat.maxParallel,
    stopBeforeDeadlineMs: config.heartbeat.stopBeforeDeadlineMs,
    onLockTakeover: (lock) => metrics.lockTakeover(lock),
    onTick: (results) => {
      for (const r of results)
        if (r.renewalLagMs !== undefined) metrics.leaseRenewalLag(r.node, r.renewalLagMs);
      hooks.onTick?.(results);
    },
  });
}
