import type { Dependencies } from '../app/dependencies.ts';
import type { NodeSettings } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import { NodeController } from './node-controller.ts';
import { NodeLease } from './node-lease.ts';

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
