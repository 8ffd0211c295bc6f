import type { V1Container } from '@kubernetes/client-node';

/**
 * What no provider of ours runs in a container, refused the same way by
 * each provider's pod-support check: `refuse(field, why)` records one
 * reason for the field under the container. Probes and lifecycle hooks
 * are each provider's to check (container-probes.ts reads and validates
 * them).
 */
export function refuseUnrunContainerFields(
  kind: 'initContainers' | 'containers',
  c: V1Container,
  refuse: (field: string, why: string) => void,
): void {
  if (!c.image) refuse('image', 'is required');
  if (c.restartPolicy !== undefined) {
    refuse(
      'restartPolicy',
      kind === 'initContainers' && c.restartPolicy === 'Always'
        ? 'sidecar containers (init containers that keep running) are not supported'
        : "not supported: containers restart by the pod's restartPolicy",
    );
  }
  if (c.restartPolicyRules?.length)
    refuse('restartPolicyRules', "not supported: containers restart by the pod's restartPolicy");
  if (c.env?.some((e) => e.value === undefined)) refuse('env', 'valueFrom was not resolved');
  if (c.envFrom?.length) refuse('envFrom', 'was not resolved');
  if (c.volumeDevices?.length) refuse('volumeDevices', 'not supported');
}
