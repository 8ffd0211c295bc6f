import type { V1PodCondition } from '@kubernetes/client-node';

/**
 * The API server stores times in whole seconds; so do the providers, or
 * every status would differ from the one read back.
 */
export function seconds(epochMs: number): Date {
  return new Date(Math.floor(epochMs / 1000) * 1000);
}

/**
 * ContainersReady and Ready as the kubelet writes them (status_manager.go's
 * GeneratePodReadyCondition without readiness gates): True when every
 * container is ready; otherwise False, with PodCompleted once the pod is
 * terminal, else ContainersNotReady naming the unready containers.
 */
export function readinessConditions(input: {
  ready: boolean;
  /** The names of the containers that are not ready. */
  unready: readonly string[];
  terminal: boolean;
  /** When readiness last changed (epoch milliseconds). */
  since: number;
}): V1PodCondition[] {
  const { unready, terminal } = input;
  const lastTransitionTime = seconds(input.since);
  const readiness = (type: string): V1PodCondition =>
    input.ready
      ? { type, status: 'True', lastTransitionTime }
      : {
          type,
          status: 'False',
          reason: terminal ? 'PodCompleted' : 'ContainersNotReady',
          ...(terminal ? {} : { message: `containers with unready status: [${unready.join(' ')}]` }),
          lastTransitionTime,
        };
  return [readiness('ContainersReady'), readiness('Ready')];
}
