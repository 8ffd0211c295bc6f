import { randomUUID } from 'node:crypto';
import type { Dependencies } from '../app/dependencies.ts';
import type { Invocation } from '../invocation.ts';
import { DynamoDbLockStore } from '../lock/dynamodb-lock-store.ts';
import { LockManager } from '../lock/lock.ts';
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
  const { config, clock, kube, table, provider } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const locks = new LockManager({
    store: new DynamoDbLockStore(table),
    // Unique per invocation, also when a warm sandbox runs several at once.
    owner: `${invocation.requestId}/${randomUUID().slice(0, 8)}`,
    leaseMs: config.lock.leaseMs,
    clock,
  });
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
    locks,
    controllers,
    clock,
    log,
    renewIntervalMs: config.node.leaseRenewIntervalMs,
    lockPollMs: config.lock.pollMs,
    maxParallel: config.heartbeat.maxParallel,
    stopAt: invocation.deadline - config.heartbeat.stopBeforeDeadlineMs,
    signal: invocation.signal,
    ...hooks,
  });
}
