/**
 * The fixed subset `npm test` runs (`run.ts --subset`): one or two quick
 * specs of every family that passes on the docker provider today, so that a
 * regression in any of them fails CI, in a few minutes. A spec joins when
 * its family starts to pass (docs/k8s-conformance.md); no spec that waits
 * minutes by design (the "should *not* be restarted" probes) belongs here.
 * run.ts refuses a name e2e.test does not have, so the subset never shrinks
 * silently.
 */
export const SUBSET: readonly string[] = [
  // Image entrypoint and command (Docker Containers).
  "[k8s.io] Docker Containers should be able to override the image's default command and arguments [NodeConformance] [Conformance]",
  // Logs through the kubelet API, over HTTP and over websockets.
  '[k8s.io] Kubelet when scheduling a busybox command in a pod should print the output to logs [NodeConformance] [Conformance]',
  '[k8s.io] Pods should support retrieving logs from the container over websockets [NodeConformance] [Conformance]',
  // Container status: a terminated reason, and the host IP.
  '[k8s.io] Kubelet when scheduling a busybox command that always fails in a pod should have an terminated reason [NodeConformance] [Conformance]',
  '[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]',
  // Image pulls that fail (a registry that does not exist).
  '[k8s.io] Container Runtime blackbox test when running a container with a new image should not be able to pull image from invalid registry [NodeConformance]',
  // Init containers: failing ones, and completed ones reported ready.
  '[k8s.io] InitContainer [NodeConformance] should not start app containers and fail the pod if init containers fail on a RestartNever pod [Conformance]',
  '[k8s.io] InitContainer [NodeConformance] should invoke init containers on a RestartNever pod [Conformance]',
  // Restarts under each policy, with a memory-backed emptyDir that outlives them.
  '[k8s.io] Container Runtime blackbox test when starting a container that exits should run with the expected status [NodeConformance] [Conformance]',
  // Probes, lifecycle hooks and termination messages (issue 26).
  '[k8s.io] Probing container with readiness probe should not be ready before initial delay and never restart [NodeConformance] [Conformance]',
  '[k8s.io] Container Lifecycle Hook when create a pod with lifecycle hook should execute poststart exec hook properly [NodeConformance] [Conformance]',
  '[k8s.io] Container Runtime blackbox test on terminated container should report termination message [LinuxOnly] if TerminationMessagePath is set [NodeConformance]',
  // exec over websockets through the API server (issue 28).
  '[k8s.io] Pods should support remote command execution over websockets [NodeConformance] [Conformance]',
  // Security contexts: the user, no_new_privs (the nonewprivs image), a read-only root filesystem.
  '[k8s.io] Security Context When creating a container with runAsUser should run the container with uid 65534 [LinuxOnly] [NodeConformance] [Conformance]',
  '[k8s.io] Security Context when creating containers with AllowPrivilegeEscalation should not allow privilege escalation when false [LinuxOnly] [NodeConformance] [Conformance]',
  '[k8s.io] Security Context When creating a pod with readOnlyRootFilesystem should run the container with readonly rootfs when readOnlyRootFilesystem=true [LinuxOnly] [NodeConformance]',
  // Environment: composed variables, ConfigMap, Secret and downward API references.
  '[k8s.io] Variable Expansion should allow composing env vars into new env vars [NodeConformance] [Conformance]',
  // $(VAR) in args, and the service-link variables (issue 31).
  "[k8s.io] Variable Expansion should allow substituting values in a container's args [NodeConformance] [Conformance]",
  '[k8s.io] Pods should contain environment variables for services [NodeConformance] [Conformance]',
  '[sig-node] ConfigMap should be consumable via environment variable [NodeConformance] [Conformance]',
  '[sig-api-machinery] Secrets should be consumable from pods in env vars [NodeConformance] [Conformance]',
  '[sig-node] Downward API should provide pod UID as env vars [NodeConformance] [Conformance]',
];
