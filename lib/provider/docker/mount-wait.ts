import type { PodPlan } from './pod-plan.ts';

/**
 * The kubelet's summary of a pod whose volumes cannot be mounted
 * (pkg/kubelet/volumemanager WaitForAttachAndMount): each sync of the pod
 * waits up to podAttachAndMountTimeout (2 min 3 s) for its volumes, then
 * records one `FailedMount` Warning, `Unable to attach or mount volumes:
 * unmounted volumes=[...], unattached volumes=[...]: timed out waiting for
 * the condition`, beside the per-volume `MountVolume.SetUp failed` Events
 * of each try. Here the wait is measured from the first failed try; each
 * 2 min 3 s of failing tries gives one such Event, however many tries
 * (volume-delivery.ts) the back-off fitted in.
 */

export const MOUNT_WAIT_MS = 123_000;

/** When the pod's current wait began, and what the last try left unmounted. */
export interface MountWait {
  since: number;
  unmounted: readonly string[];
}

/** Whether a wait that began at `since` has run its course at `now`: its Event is due and a new wait begins. */
export function mountWaitOver(since: number, now: number): boolean {
  return now - since >= MOUNT_WAIT_MS;
}

/**
 * The Event's message. `unattached` lists every volume of the pod, as the
 * kubelet's does for volumes that need no attach (configMap, secret,
 * emptyDir...): its actual state of the world holds them only once mounted.
 */
export function unableToMountMessage(unmounted: readonly string[], unattached: readonly string[]): string {
  return `Unable to attach or mount volumes: unmounted volumes=[${unmounted.join(' ')}], unattached volumes=[${unattached.join(' ')}]: timed out waiting for the condition`;
}

/** The pod's own volumes, in its spec's order, without the provider's (names no Kubernetes volume can have). */
export function podVolumeNames(plan: Pick<PodPlan, 'volumes'>): string[] {
  return plan.volumes.map((v) => v.name).filter((name) => !name.includes('_'));
}
