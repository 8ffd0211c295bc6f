import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import { refuseUnrunContainerFields } from '../container-refusals.ts';
import { fileVolume, isFileVolume } from '../file-volumes.ts';
import { isAdmissionTokenProjection } from '../service-account-volume.ts';
import { healthProblems } from './health-checks.ts';
import { VOLUME_WRITER_NAME } from './volume-writer.ts';

/**
 * What of a pod spec a Fargate task cannot honour. A pod asking for any of
 * it is refused as a whole, every reason named, rather than run without it:
 * a pod without its hostPath volume, its probes or its privileges would be
 * another pod. Fields that are the scheduler's or the API server's business
 * (nodeSelector, affinity, tolerations, priority...) and the API server's
 * defaults that change nothing here (dnsPolicy ClusterFirst: a task uses the
 * VPC's resolver; terminationMessagePath/Policy) and what the pipeline
 * handles before or around the provider (enableServiceLinks: the service
 * variables are in the env it hands over; activeDeadlineSeconds: pod-status
 * enforces it) are accepted; docs/providers/ecs-fargate.md lists what each field becomes.
 * ConfigMap, Secret, downwardAPI and projected volumes are checked as the
 * kubelet checks them (file-volumes.ts) and filled by the volume writer
 * (volume-writer.ts); a projected serviceAccountToken source is refused.
 */

/** The annotation AppArmor profiles were asked for with before Kubernetes 1.30, per container. */
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/** Every reason the pod cannot run as a Fargate task, naming the field; empty when it can. */
export function unsupportedFields(pod: V1Pod): string[] {
  const spec = pod.spec;
  if (!spec) return ['spec is missing'];
  const reasons: string[] = [];
  const refuse = (field: string, why: string) => reasons.push(`spec.${field}: ${why}`);
  if (spec.hostNetwork)
    refuse('hostNetwork', 'a Fargate task has its own network interface, never a host network');
  if (spec.hostPID) refuse('hostPID', 'a Fargate task has no host PID namespace to share');
  if (spec.hostIPC) refuse('hostIPC', 'a Fargate task has no host IPC namespace to share');
  if (spec.hostAliases?.length) refuse('hostAliases', 'not supported with awsvpc networking');
  if (spec.hostname) refuse('hostname', 'a Fargate task cannot set its hostname');
  if (spec.hostnameOverride) refuse('hostnameOverride', 'a Fargate task cannot set its hostname');
  if (spec.subdomain) refuse('subdomain', 'a Fargate task cannot set its hostname or domain');
  if (spec.os && spec.os.name !== 'linux')
    refuse('os.name', `${spec.os.name} is not supported: Linux tasks only`);
  if (spec.resources) refuse('resources', 'pod-level resources are not supported; set them per container');
  if (spec.resourceClaims?.length) refuse('resourceClaims', 'dynamic resource allocation is not supported');
  if (spec.dnsConfig) refuse('dnsConfig', 'a Fargate task uses the VPC resolver');
  if (spec.dnsPolicy === 'None') refuse('dnsPolicy', 'None needs dnsConfig, which Fargate cannot honour');
  if ((spec.ephemeralContainers ?? []).length > 0) refuse('ephemeralContainers', 'not supported');
  for (const gate of spec.readinessGates ?? [])
    if (!gate.conditionType) refuse('readinessGates', 'a readiness gate needs its conditionType');
  if (spec.runtimeClassName) refuse('runtimeClassName', 'Fargate has one runtime');
  if (spec.hostUsers === false)
    refuse('hostUsers', 'a Fargate task cannot run in a user namespace of its own');
  if (spec.securityContext?.appArmorProfile)
    refuse('securityContext.appArmorProfile', 'a Fargate task takes no AppArmor profile');
  const podSc = spec.securityContext;
  for (const key of Object.keys(pod.metadata?.annotations ?? {})) {
    if (key.startsWith(APPARMOR_ANNOTATION_PREFIX))
      reasons.push(`metadata.annotations[${key}]: a Fargate task takes no AppArmor profile`);
  }
  if (podSc?.sysctls?.length) refuse('securityContext.sysctls', 'not supported');
  if (podSc?.seLinuxOptions) refuse('securityContext.seLinuxOptions', 'not supported');
  if (podSc?.fsGroup !== undefined)
    refuse('securityContext.fsGroup', 'Fargate volumes have no group ownership');
  if (podSc?.supplementalGroups?.length) refuse('securityContext.supplementalGroups', 'not supported');
  if (podSc?.supplementalGroupsPolicy === 'Strict')
    refuse('securityContext.supplementalGroupsPolicy', 'Strict is not supported');
  if (podSc?.windowsOptions) refuse('securityContext.windowsOptions', 'Linux tasks only');
  for (const volume of spec.volumes ?? []) reasons.push(...volumeReasons(volume, pod));
  const writes = (spec.volumes ?? []).some((v) => isFileVolume(v) && !isAdmissionTokenProjection(v, pod));
  for (const kind of ['initContainers', 'containers'] as const)
    for (const c of spec[kind] ?? [])
      if (writes && c.name === VOLUME_WRITER_NAME)
        reasons.push(
          `spec.${kind}[${c.name}].name: ${VOLUME_WRITER_NAME} is the name of the container that writes the pod's file volumes on Fargate`,
        );
  for (const [kind, list] of [
    ['initContainers', spec.initContainers ?? []],
    ['containers', spec.containers ?? []],
  ] as const) {
    for (const container of list)
      reasons.push(...containerReasons(`spec.${kind}[${container.name}]`, kind, container, pod));
  }
  return reasons;
}

function volumeReasons(volume: V1Volume, pod: V1Pod): string[] {
  const at = `spec.volumes[${volume.name}]`;
  if (volume.emptyDir) {
    if (volume.emptyDir.medium === 'Memory') return [`${at}.emptyDir.medium: Fargate has no tmpfs volumes`];
    if (volume.emptyDir.sizeLimit !== undefined)
      return [`${at}.emptyDir.sizeLimit: Fargate task volumes have no size limit of their own`];
    return [];
  }
  // The projected token volume a 1.21+ API server adds: not mounted (the `<sa>-token-*` Secret one is a Secret volume).
  if (isAdmissionTokenProjection(volume, pod)) return [];
  if (isFileVolume(volume)) {
    const tokens = (volume.projected?.sources ?? []).flatMap((s, i) =>
      s.serviceAccountToken
        ? [
            `${at}.projected.sources[${i}].serviceAccountToken: a Fargate task gets no service account token (its files are written once, at start, and a token must be refreshed)`,
          ]
        : [],
    );
    if (tokens.length > 0) return tokens;
    const planned = fileVolume(volume, pod);
    return 'reasons' in planned ? planned.reasons : [];
  }
  const kind = Object.keys(volume).find((k) => k !== 'name') ?? 'an empty volume source';
  return [
    `${at}: only emptyDir, configMap, secret, downwardAPI and projected volumes are supported on Fargate, not ${kind}`,
  ];
}

function containerReasons(
  at: string,
  kind: 'initContainers' | 'containers',
  c: V1Container,
  pod: V1Pod,
): string[] {
  const reasons: string[] = [];
  const refuse = (field: string, why: string) => reasons.push(`${at}.${field}: ${why}`);
  // A sidecar would become a non-essential container the app containers wait on to exit 0: never.
  refuseUnrunContainerFields(kind, c, refuse);
  reasons.push(...healthProblems(at, kind, c));
  if (c.imagePullPolicy === 'Never') refuse('imagePullPolicy', 'Never: a Fargate task has no local images');
  if (c.lifecycle?.stopSignal)
    refuse('lifecycle.stopSignal', "a task definition cannot set a container's stop signal");
  for (const mount of c.volumeMounts ?? []) {
    if (mount.subPath || mount.subPathExpr)
      refuse(
        `volumeMounts[${mount.name}].${mount.subPath ? 'subPath' : 'subPathExpr'}`,
        'an ECS mount point mounts a whole task volume: Fargate cannot mount one file or directory of it',
      );
    if (mount.mountPropagation && mount.mountPropagation !== 'None')
      refuse(`volumeMounts[${mount.name}].mountPropagation`, 'not supported');
  }
  for (const port of c.ports ?? []) {
    const name = `ports[${port.containerPort}]`;
    if (port.protocol === 'SCTP') refuse(`${name}.protocol`, 'Fargate maps tcp and udp ports only');
    if (port.hostPort !== undefined && port.hostPort !== port.containerPort)
      refuse(`${name}.hostPort`, 'must equal containerPort with awsvpc networking');
    if (port.hostIP) refuse(`${name}.hostIP`, 'not supported');
  }
  const extra = [
    ...Object.keys(c.resources?.limits ?? {}),
    ...Object.keys(c.resources?.requests ?? {}),
  ].filter((r) => r !== 'cpu' && r !== 'memory');
  if (extra.length > 0)
    refuse('resources', `only cpu and memory are supported, not ${[...new Set(extra)].join(', ')}`);
  if (c.resources?.claims?.length) refuse('resources.claims', 'dynamic resource allocation is not supported');
  reasons.push(...securityReasons(at, c, pod));
  return reasons;
}

function securityReasons(at: string, c: V1Container, pod: V1Pod): string[] {
  const reasons: string[] = [];
  const refuse = (field: string, why: string) => reasons.push(`${at}.securityContext.${field}: ${why}`);
  const sc = c.securityContext;
  const podSc = pod.spec?.securityContext;
  if (sc?.privileged) refuse('privileged', 'Fargate does not run privileged containers');
  const added = (sc?.capabilities?.add ?? []).filter((cap) => cap !== 'SYS_PTRACE');
  if (added.length > 0)
    refuse('capabilities.add', `Fargate can add SYS_PTRACE only, not ${added.join(', ')}`);
  if (sc?.allowPrivilegeEscalation === false)
    refuse('allowPrivilegeEscalation', 'Fargate cannot set no_new_privs on a container');
  if (sc?.seLinuxOptions) refuse('seLinuxOptions', 'not supported');
  if (sc?.appArmorProfile) refuse('appArmorProfile', 'a Fargate task takes no AppArmor profile');
  if (sc?.windowsOptions) refuse('windowsOptions', 'Linux tasks only');
  if (sc?.procMount && sc.procMount !== 'Default') refuse('procMount', 'not supported');
  const seccomp = sc?.seccompProfile ?? podSc?.seccompProfile;
  if (seccomp && seccomp.type !== 'RuntimeDefault')
    refuse('seccompProfile', 'only RuntimeDefault is supported');
  // The image's user is unknown until it runs, so runAsNonRoot needs an explicit runAsUser to check.
  const nonRoot = sc?.runAsNonRoot ?? podSc?.runAsNonRoot;
  const user = sc?.runAsUser ?? podSc?.runAsUser;
  if (nonRoot && user === undefined) refuse('runAsNonRoot', 'needs runAsUser on this provider');
  if (nonRoot && user === 0) refuse('runAsUser', 'is 0 while runAsNonRoot is set');
  const group = sc?.runAsGroup ?? podSc?.runAsGroup;
  if (group !== undefined && user === undefined) refuse('runAsGroup', 'needs runAsUser on this provider');
  return reasons;
}
