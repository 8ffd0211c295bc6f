import { createEcsTaskStateHandler } from '../../functions/ecs-task-state.ts';
import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { createPodStatusHandler } from '../../functions/pod-status.ts';
import { createPodSyncHandler } from '../../functions/pod-sync.ts';
import { createPodWatchHandler } from '../../functions/pod-watch.ts';
import { createReconcileHandler } from '../../functions/reconcile.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { LambdaHandler } from './lambda-function.ts';

/** The functions of serverless.yml, by name. */
export type DeploymentFunction =
  | 'heartbeat'
  | 'pod-watch'
  | 'pod-status'
  | 'reconcile'
  | 'pod-sync'
  | 'ecs-task-state';

/**
 * The real handlers of the functions, configured by `env`, with
 * pod-watch publishing through `publisher` instead of EventBridge. Shared by
 * the in-process deployment and the function host's sandbox process, so both
 * run exactly what a Lambda bundle runs.
 */
export function createDeploymentHandlers(
  env: Record<string, string | undefined>,
  publisher: EventPublisher,
): Record<DeploymentFunction, LambdaHandler> {
  return {
    heartbeat: createHeartbeatHandler(env),
    'pod-watch': createPodWatchHandler(env, { publisher }),
    'pod-status': createPodStatusHandler(env),
    reconcile: createReconcileHandler(env),
    'pod-sync': createPodSyncHandler(env),
    // Built for every deployment, invoked only by ECS task-state events (provider ecs-fargate).
    'ecs-task-state': createEcsTaskStateHandler(env),
  };
}
