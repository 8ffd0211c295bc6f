import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { PodRef } from '../../harness/provider-setup.ts';

/** What the scenarios read off a pod. */

export function refOf(pod: V1Pod): PodRef {
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
  };
}

export function condition(pod: V1Pod, type: string): string | undefined {
  return pod.status?.conditions?.find((c) => c.type === type)?.status;
}

export function isRunningAndReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && condition(pod, 'Ready') === 'True';
}

export function containerStatus(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((c) => c.name === name);
}

export function initContainerStatus(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return pod.status?.initContainerStatuses?.find((c) => c.name === name);
}

/** Epoch ms of an API time (the API server writes whole seconds). */
export function ms(time: Date | string | undefined): number {
  return time === undefined ? Number.NaN : new Date(time).getTime();
}
