import { createEcsTaskStateHandler } from '../../functions/ecs-task-state.ts';
import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { createPodStatusHandler } from '../../functions/pod-status.ts';
import { createPodSyncHandler } from '../../functions/pod-sync.ts';
import { createPodWatchHandler } from '../../functions/pod-watch.ts';
import { createReconcileHandler } from '../../functions/reconcile.ts';
import { createTickHandler } from '../../functions/tick.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { TickQueue } from '../tick/tick-queue.ts';
import type { LambdaHandler } from './lambda-function.ts';

/** The functions of serverless.yml, by name. */
export type DeploymentFunction =
  | 'heartbeat'
  | 'pod-watch'
  | 'pod-status'
  | 'reconcile'
  | 'pod-sync'
  | 'ecs-task-state'
  | 'tick';

/**
 * Each function's own kubeconfig (its own cluster user, as an EKS access
 * entry maps each function's role): its SVK_KUBECONFIG instead of `env`'s.
 */
export type FunctionKubeconfigs = Partial<Record<DeploymentFunction, string>>;

/**
 * The real handlers of the functions, configured by `env` (with a
 * function's own SVK_KUBECONFIG when `kubeconfigs` names one), with pod-watch
 * (and the tick's pod-watch part) publishing through `publisher` instead of
 * EventBridge, and the tick chaining through `tickQueue` (the in-process
 * FIFO queue) instead of SQS. Without a queue the tick function is the SQS
 * one (it fails at its first invocation without a queue URL). Shared by
 * the in-process deployment and the function host's sandbox process, so both
 * run exactly what a Lambda bundle runs.
 */
export function createDeploymentHandlers(
  env: Record<string, string | undefined>,
  publisher: EventPublisher,
  tickQueue?: TickQueue,
  kubeconfigs: FunctionKubeconfigs = {},
): Record<DeploymentFunction, LambdaHandler> {
  const envOf = (name: DeploymentFunction) => {
    const kubeconfig = kubeconfigs[name];
    return kubeconfig ? { ...env, SVK_KUBECONFIG: kubeconfig } : env;
  };
  return {
    heartbeat: createHeartbeatHandler(envOf('heartbeat')),
    'pod-watch': createPodWatchHandler(envOf('pod-watch'), { publisher }),
    'pod-status': createPodStatusHandler(envOf('pod-status')),
    reconcile: createReconcileHandler(envOf('reconcile')),
    'pod-sync': createPodSyncHandler(envOf('pod-sync')),
    // Built for every deployment, invoked only by ECS task-state events (provider ecs-fargate).
    'ecs-task-state': createEcsTaskStateHandler(envOf('ecs-task-state')),
    tick: createTickHandler(envOf('tick'), { publisher, ...(tickQueue ? { queue: tickQueue } : {}) }),
  };
}
