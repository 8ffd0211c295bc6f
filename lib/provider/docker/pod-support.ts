import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import type { DownwardApiOptions } from '../../kube/downward-api.ts';
import { expandEnv } from '../../kube/env-expansion.ts';
import { probeProblems } from '../container-probes.ts';
import { refuseUnrunContainerFields } from '../container-refusals.ts';
import { fileVolume, isFileVolume, mountSubPath } from '../file-volumes.ts';
import { hostnameProblem } from './pod-hostname.ts';

/**
 * What of a pod spec the Docker provider cannot honour. A pod asking for any
 * of it is refused as a whole, with every reason named, rather than run
 * without it: running a pod without its hostPath volume or its privileges
 * would be running another pod.
 *
 * Fields that are the scheduler's or the API server's business (nodeSelector,
 * affinity, tolerations, priority, serviceAccountName...) do not concern a
 * kubelet and are accepted. So are the API server's defaults that change
 * nothing here: dnsPolicy ClusterFirst (containers use the engine's DNS);
 * the pipeline's own business: enableServiceLinks (the service variables
 * are in the env it hands over) and activeDeadlineSeconds (pod-status
 * enforces it); fsGroupChangePolicy (the provider writes every file of a
 * volume itself, so each is in the fsGroup from the start, which both
 * policies lead to); fields that only qualify a refused one
 * (seLinuxChangePolicy, overhead) or an operation the
 * provider never performs (resizePolicy). docs/providers/docker.md lists
 * every field of the pod spec and what becomes of it.
 *
 * A subdomain is honoured (pod-hostname.ts) but for an FQDN too long to be
 * the hostname with setHostnameAsFQDN, which the kubelet refuses too.
 *
 * Confinement is never loosened nor chosen per pod: every container runs
 * under the engine's default seccomp and AppArmor profiles, in the host's
 * user namespace, with the engine's default runtime. So seccompProfile is
 * accepted as RuntimeDefault only (what the engine applies anyway), and
 * appArmorProfile (which the engine applies only where the host has
 * AppArmor, unknown here), hostUsers: false and runtimeClassName are refused.
 * seLinuxOptions are the engine's label options where its host has SELinux
 * and ignored where it has not, as the kubelet does (engine-selinux.ts).
 */

/** The annotation AppArmor profiles were asked for with before Kubernetes 1.30, per container. */
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * Every reason the pod cannot run here, naming the field; empty when it can.
 * `clusterDomain` is the one its FQDN ends in (`SVK_DOCKER_CLUSTER_DOMAIN`).
 */
export function unsupportedFields(
  pod: V1Pod,
  clusterDomain: string,
  /** What downwardAPI volumes read of the node. */
  downward: DownwardApiOptions = {},
): string[] {
  const spec = pod.spec;
  if (!spec) return ['spec is missing'];
  const reasons: string[] = [];
  const refuse = (field: string, why: string) => reasons.push(`${field}: ${why}`);
  if (spec.hostNetwork) refuse('spec.hostNetwork', 'pods never share the Docker host network');
  if (spec.hostPID) refuse('spec.hostPID', 'pods never share the Docker host PID namespace');
  if (spec.hostIPC) refuse('spec.hostIPC', 'pods never share the Docker host IPC namespace');
  if ((spec.ephemeralContainers ?? []).length > 0) refuse('spec.ephemeralContainers', 'not supported');
  if (spec.securityContext?.sysctls?.length) refuse('spec.securityContext.sysctls', 'not supported');
  if (spec.securityContext?.seccompProfile && spec.securityContext.seccompProfile.type !== 'RuntimeDefault')
    refuse('spec.securityContext.seccompProfile', 'only RuntimeDefault is supported');
  if (spec.securityContext?.appArmorProfile)
    refuse('spec.securityContext.appArmorProfile', 'AppArmor profiles are not set by this provider');
  for (const key of Object.keys(pod.metadata?.annotations ?? {})) {
    if (key.startsWith(APPARMOR_ANNOTATION_PREFIX))
      refuse(`metadata.annotations[${key}]`, 'AppArmor profiles are not set by this provider');
  }
  if (spec.securityContext?.supplementalGroupsPolicy === 'Strict')
    refuse(
      'spec.securityContext.supplementalGroupsPolicy',
      "Strict is not supported: the engine adds the groups of the image's /etc/group (Merge)",
    );
  if (spec.securityContext?.windowsOptions) refuse('spec.securityContext.windowsOptions', 'not supported');
  if (spec.os && spec.os.name !== 'linux')
    refuse('spec.os.name', `${spec.os.name} is not supported: containers run on a Linux engine`);
  if (spec.hostUsers === false) refuse('spec.hostUsers', 'user namespaces are not set up by this provider');
  if (spec.runtimeClassName !== undefined)
    refuse('spec.runtimeClassName', "containers run with the engine's default runtime");
  const hostname = hostnameProblem(pod, clusterDomain);
  if (hostname) reasons.push(hostname);
  if (spec.resources)
    refuse('spec.resources', 'pod-level resources are not enforced; set them per container');
  if (spec.resourceClaims?.length)
    refuse('spec.resourceClaims', 'dynamic resource allocation is not supported');
  for (const gate of spec.readinessGates ?? [])
    if (!gate.conditionType) refuse('spec.readinessGates', 'a readiness gate needs its conditionType');
  for (const volume of spec.volumes ?? []) {
    if (volume.emptyDir) {
      if (volume.emptyDir.sizeLimit !== undefined)
        refuse(`spec.volumes[${volume.name}].emptyDir.sizeLimit`, 'not enforced by the engine');
      continue;
    }
    if (isFileVolume(volume)) {
      const planned = fileVolume(volume, pod, downward);
      if ('reasons' in planned) reasons.push(...planned.reasons);
      continue;
    }
    refuse(
      `spec.volumes[${volume.name}]`,
      `only emptyDir, configMap, secret, downwardAPI and projected volumes are supported, not ${volumeKind(volume)}`,
    );
  }
  for (const [kind, list] of [
    ['initContainers', spec.initContainers ?? []],
    ['containers', spec.containers ?? []],
  ] as const) {
    for (const container of list)
      reasons.push(...containerReasons(`spec.${kind}[${container.name}]`, kind, container, pod));
  }
  return reasons;
}

function containerReasons(
  at: string,
  kind: 'initContainers' | 'containers',
  c: V1Container,
  pod: V1Pod,
): string[] {
  const reasons: string[] = [];
  const refuse = (field: string, why: string) => reasons.push(`${at}.${field}: ${why}`);
  refuseUnrunContainerFields(kind, c, refuse);
  reasons.push(...probeProblems(at, kind, c));
  // The message file is bind-mounted at the path (termination-message.ts): `source:target` in the engine's syntax.
  const messagePath = c.terminationMessagePath;
  if (messagePath !== undefined && (!messagePath.startsWith('/') || messagePath.includes(':')))
    refuse('terminationMessagePath', 'must be an absolute path without ":"');
  if (
    c.terminationMessagePolicy !== undefined &&
    c.terminationMessagePolicy !== 'File' &&
    c.terminationMessagePolicy !== 'FallbackToLogsOnError'
  )
    refuse('terminationMessagePolicy', 'must be File or FallbackToLogsOnError');
  if (c.lifecycle?.stopSignal)
    refuse('lifecycle.stopSignal', 'containers are stopped with SIGTERM by this provider');
  for (const mount of c.volumeMounts ?? []) {
    const sub = mountSubPath(mount, c, expandEnv);
    if ('problem' in sub)
      refuse(`volumeMounts[${mount.name}].${mount.subPathExpr ? 'subPathExpr' : 'subPath'}`, sub.problem);
    if (mount.mountPropagation && mount.mountPropagation !== 'None')
      refuse(`volumeMounts[${mount.name}].mountPropagation`, 'not supported');
  }
  const limits = Object.keys(c.resources?.limits ?? {}).filter((r) => r !== 'cpu' && r !== 'memory');
  if (limits.length > 0)
    refuse('resources.limits', `only cpu and memory are enforced, not ${limits.join(', ')}`);
  if (c.resources?.claims?.length) refuse('resources.claims', 'dynamic resource allocation is not supported');
  const sc = c.securityContext;
  if (sc?.privileged) refuse('securityContext.privileged', 'privileged containers are refused');
  if (sc?.capabilities?.add?.length)
    refuse('securityContext.capabilities.add', 'added capabilities are refused');
  if (sc?.windowsOptions) refuse('securityContext.windowsOptions', 'not supported');
  if (sc?.procMount && sc.procMount !== 'Default') refuse('securityContext.procMount', 'not supported');
  if (sc?.seccompProfile && sc.seccompProfile.type !== 'RuntimeDefault')
    refuse('securityContext.seccompProfile', 'only RuntimeDefault is supported');
  if (sc?.appArmorProfile)
    refuse('securityContext.appArmorProfile', 'AppArmor profiles are not set by this provider');
  // The image's user is unknown until it runs, so runAsNonRoot needs an explicit runAsUser to check.
  const podSc = pod.spec?.securityContext;
  const nonRoot = sc?.runAsNonRoot ?? podSc?.runAsNonRoot;
  const user = sc?.runAsUser ?? podSc?.runAsUser;
  if (nonRoot && user === undefined)
    refuse('securityContext.runAsNonRoot', 'needs runAsUser on this provider');
  if (nonRoot && user === 0) refuse('securityContext.runAsUser', 'is 0 while runAsNonRoot is set');
  // The engine takes a group only with a user (`uid:gid`), and the image's user is unknown here.
  const group = sc?.runAsGroup ?? podSc?.runAsGroup;
  if (group !== undefined && user === undefined)
    refuse('securityContext.runAsGroup', 'needs runAsUser on this provider');
  return reasons;
}

function volumeKind(volume: V1Volume): string {
  const kind = Object.keys(volume).find((k) => k !== 'name');
  return kind ?? 'an empty volume source';
}
