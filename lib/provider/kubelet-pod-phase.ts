import type { V1ContainerStatus } from '@kubernetes/client-node';

/**
 * The kubelet's getPhase (pkg/kubelet/kubelet_pods.go) from container
 * statuses, for providers that build those statuses themselves: Pending until
 * every init container succeeded and every container started once; Failed
 * when an init container failed for good; then Running while anything runs
 * or will restart, and Succeeded or Failed once everything exited for good.
 *
 * `initFailed`: an init container failed and the pod will not run it again
 * (restartPolicy Never). A container waiting with a terminated lastState is
 * one that exited and will be restarted.
 */
export function kubeletPodPhase(
  restartPolicy: string,
  inits: readonly V1ContainerStatus[],
  containers: readonly V1ContainerStatus[],
  initFailed: boolean,
): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  if (initFailed) return 'Failed';
  const initialized = inits.every((s) => s.state?.terminated?.exitCode === 0);
  if (!initialized) return 'Pending';
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const s of containers) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.lastState?.terminated) stopped++;
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped === 0) return 'Pending';
  if (restartPolicy === 'Always') return 'Running';
  if (stopped === succeeded) return 'Succeeded';
  if (restartPolicy === 'OnFailure') return 'Running';
  return 'Failed';
}
