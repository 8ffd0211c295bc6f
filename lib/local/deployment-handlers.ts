import { createHeartbeatHandler } from '../../functions/heartbeat.ts';
import { createPodStatusHandler } from '../../functions/pod-status.ts';
import { createPodSyncHandler } from '../../functions/pod-sync.ts';
import { createPodWatchHandler } from '../../functions/pod-watch.ts';
import { createReconcileHandler } from '../../functions/reconcile.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { LambdaHandler } from './lambda-function.ts';

/** The functions of serverless.yml, by name. */
export const DEPLOYMENT_FUNCTIONS = [
  'heartbeat',
  'pod-watch',
  'pod-status',
  'reconcile',
  'pod-sync',
] as const;

export type DeploymentFunction = (typeof DEPLOYMENT_FUNCTIONS)[number];

export function isDeploymentFunction(name: unknown): name is DeploymentFunction {
  return typeof name === 'string' && (DEPLOYMENT_FUNCTIONS as readonly string[]).includes(name);
}

/**
 * The real handlers of the five functions, configured by `env`, with
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
  };
}
