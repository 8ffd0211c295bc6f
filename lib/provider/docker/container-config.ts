import type Docker from 'dockerode';
import type { EngineKind } from './engine-kind.ts';
import {
  deletingName,
  identityLabels,
  infraName,
  instanceName,
  LABELS,
  type PodIdentity,
  TERMINATION_DIR,
  TERMINATION_VOLUME,
  volumeName,
} from './names.ts';
import type { AddressField, ContainerPlan, PodPlan, SeLinuxLabel } from './pod-plan.ts';
import { planEnv } from './pod-plan-codec.ts';

/**
 * The engine's create options for a pod's objects, from its plan: pure, so
 * that the same plan always asks the engine for the same thing.
 *
 * Every container runs with `HostConfig.Init` (a tiny init as PID 1 that
 * forwards signals and reaps zombies), so a main process that installs no
 * SIGTERM handler still stops on SIGTERM, as it does under the kubelet.
 * None has an engine restart policy: restarts are ours, with the kubelet's
 * back-off, as new instances.
 */

export interface EngineSettings {
  /** Network of the infra containers, e.g. `bridge`. */
  network: string;
  infraImage: string;
}

/** The infra ("pause") container: the pod's network and IPC namespaces, hostname, DNS and host ports. */
export function infraConfig(
  plan: PodPlan,
  settings: EngineSettings,
  /** The engine host enforces SELinux (engine-selinux.ts): the pod's seLinuxOptions become its label. */
  selinux = false,
): Docker.ContainerCreateOptions {
  const labels = selinux ? labelOptions(plan.seLinux) : [];
  const exposed = Object.fromEntries(plan.hostPorts.map((p) => [`${p.containerPort}/${p.protocol}`, {}]));
  const bindings: Record<string, Array<{ HostPort: string; HostIp?: string }>> = {};
  for (const p of plan.hostPorts) {
    const key = `${p.containerPort}/${p.protocol}`;
    bindings[key] = [
      ...(bindings[key] ?? []),
      { HostPort: String(p.hostPort), ...(p.hostIp ? { HostIp: p.hostIp } : {}) },
    ];
  }
  const binds = infraBinds(plan);
  return {
    name: infraName(plan.uid),
    Image: settings.infraImage,
    Hostname: plan.hostname,
    // Docker Engine sets it in the UTS namespace and writes the kubelet's `<pod IP> <fqdn> <hostname>`
    // line in /etc/hosts from Hostname and Domainname; Podman 4.3 drops it (docs/providers/docker.md).
    ...(plan.domainname ? { Domainname: plan.domainname } : {}),
    Env: [planEnv(plan)],
    Labels: { ...identityLabels(plan), [LABELS.role]: 'infra' },
    ExposedPorts: exposed,
    HostConfig: {
      Init: true,
      NetworkMode: settings.network,
      IpcMode: 'shareable',
      RestartPolicy: { Name: 'no' },
      PortBindings: bindings,
      ...(binds.length > 0 ? { Binds: binds } : {}),
      ExtraHosts: plan.extraHosts,
      ...(labels.length > 0 ? { SecurityOpt: labels } : {}),
      ...(plan.dns
        ? { Dns: plan.dns.nameservers, DnsSearch: plan.dns.searches, DnsOptions: plan.dns.options }
        : {}),
    },
  };
}

/**
 * The volumes the infra container holds for the pod's lifetime: the
 * termination messages' volume, each `medium: Memory` emptyDir, and each
 * held volume (file volumes, emptyDirs, a managed /etc/hosts). The
 * engines mount a tmpfs volume while a container uses it and unmount it,
 * contents and all, when the last one stops; held by the infra container,
 * its files outlive a container's restart, as a kubelet's emptyDir does.
 */
function infraBinds(plan: PodPlan): string[] {
  return plan.volumes.flatMap((v) => {
    if (v.name === TERMINATION_VOLUME) return [`${volumeName(plan.uid, v.name)}:${TERMINATION_DIR}`];
    if (v.held) return [`${volumeName(plan.uid, v.name)}:${heldVolumePath(v.name)}`];
    return v.memory ? [`${volumeName(plan.uid, v.name)}:${MEMORY_VOLUMES_DIR}/${v.name}`] : [];
  });
}

/** Where the infra container mounts the pod's memory-backed emptyDirs (never read). */
const MEMORY_VOLUMES_DIR = '/.svk-memory-volumes';
/** Where the infra container mounts the pod's held volumes, which are written through it. */
export const HELD_VOLUMES_DIR = '/.svk-volumes';

/** Where a held volume is in the infra container. */
export function heldVolumePath(volume: string): string {
  return `${HELD_VOLUMES_DIR}/${volume}`;
}

/** What an instance's create options take from the engine and the running pod, beside its plan. */
export interface InstanceFacts {
  /** The engine host enforces SELinux (engine-selinux.ts): the container's seLinuxOptions become its label. */
  selinux?: boolean;
  /** The infra container's address (the pod IP) and the node's, for the container's addressEnv. */
  podIp?: string;
  hostIp?: string;
}

/** The engine's label options (`label=level:s0`...) for an SELinux context. */
export function labelOptions(label: SeLinuxLabel | undefined): string[] {
  if (!label) return [];
  return (['user', 'role', 'type', 'level'] as const).flatMap((part) =>
    label[part] ? [`label=${part}:${label[part]}`] : [],
  );
}

/**
 * The container's env with its address variables set (ContainerPlan.addressEnv), as the kubelet resolves
 * them when it creates the container, once the pod sandbox has its IP.
 */
export function containerEnv(container: ContainerPlan, facts: InstanceFacts): string[] {
  const late = new Map(container.addressEnv?.map((a) => [a.name, a.field]));
  if (late.size === 0) return container.env;
  const value = (field: AddressField) => (field === 'status.hostIP' ? facts.hostIp : facts.podIp) ?? '';
  return container.env.map((entry) => {
    const name = entry.slice(0, entry.indexOf('='));
    const field = late.get(name);
    return field ? `${name}=${value(field)}` : entry;
  });
}

/**
 * One instance of an init or app container, joined to the infra container's
 * namespaces. Its hostname is the infra container's, as a pod's containers
 * share their sandbox's: Docker Engine copies it to a container that joins
 * the infra container's network, Podman needs the UTS namespace joined too.
 */
export function instanceConfig(
  plan: PodPlan,
  container: ContainerPlan,
  role: 'init' | 'app',
  attempt: number,
  infraId: string,
  engine: EngineKind,
  /** More `source:target` binds: the instance's termination message file. */
  extraBinds: readonly string[] = [],
  /** The directories on the engine host of the volumes a subPath mount uses, by Kubernetes volume name. */
  volumeDirs: ReadonlyMap<string, string> = new Map(),
  facts: InstanceFacts = {},
): Docker.ContainerCreateOptions {
  const securityOpt = [
    ...(container.noNewPrivileges ? ['no-new-privileges'] : []),
    ...(facts.selinux ? labelOptions(container.seLinux) : []),
  ];
  return {
    name: instanceName(plan.uid, role, container.name, attempt),
    Image: container.image,
    // Kubernetes' command replaces the image's entrypoint and drops its CMD; args replace the CMD.
    ...(container.command ? { Entrypoint: container.command, Cmd: container.args ?? [] } : {}),
    ...(!container.command && container.args ? { Cmd: container.args } : {}),
    ...(container.workingDir ? { WorkingDir: container.workingDir } : {}),
    ...(container.user ? { User: container.user } : {}),
    Env: containerEnv(container, facts),
    Tty: container.tty,
    OpenStdin: container.stdin,
    StdinOnce: container.stdinOnce,
    Labels: {
      ...identityLabels(plan),
      [LABELS.role]: role,
      [LABELS.container]: container.name,
      [LABELS.attempt]: String(attempt),
    },
    HostConfig: {
      Init: true,
      NetworkMode: `container:${infraId}`,
      IpcMode: `container:${infraId}`,
      ...(engine === 'podman' ? { UTSMode: `container:${infraId}` } : {}),
      ...(plan.sharePid ? { PidMode: `container:${infraId}` } : {}),
      RestartPolicy: { Name: 'no' },
      Binds: [
        ...container.mounts.map((m) => {
          const options = m.readOnly ? ':ro' : '';
          if (!m.subPath) return `${volumeName(plan.uid, m.volume)}:${m.path}${options}`;
          const dir = volumeDirs.get(m.volume);
          if (!dir) throw new Error(`instanceConfig: no host directory for volume ${m.volume}`);
          return `${dir}/${m.subPath}:${m.path}${options}`;
        }),
        ...extraBinds,
      ],
      ...(container.nanoCpus !== undefined ? { NanoCpus: container.nanoCpus } : {}),
      ...(container.memoryBytes !== undefined ? { Memory: container.memoryBytes } : {}),
      ...(container.cpuShares !== undefined ? { CpuShares: container.cpuShares } : {}),
      ReadonlyRootfs: container.readOnlyRootfs,
      ...(securityOpt.length > 0 ? { SecurityOpt: securityOpt } : {}),
      ...(container.capDrop.length > 0 ? { CapDrop: container.capDrop } : {}),
      ...(container.groupAdd.length > 0 ? { GroupAdd: container.groupAdd } : {}),
    },
  };
}

/**
 * The deletion marker: created and never started, it records on the engine
 * that the pod is being deleted and when its grace period ends (now, for a
 * removal that does not wait), so that no poller creates or starts a
 * container of the pod (a restart of one that was sent SIGTERM, say), and
 * any of them kills what is left once the deadline passes.
 */
export function deletingConfig(
  pod: PodIdentity,
  deadline: Date,
  settings: Pick<EngineSettings, 'infraImage'>,
): Docker.ContainerCreateOptions {
  return {
    name: deletingName(pod.uid),
    Image: settings.infraImage,
    Labels: { ...identityLabels(pod), [LABELS.role]: 'deleting', [LABELS.deadline]: deadline.toISOString() },
    HostConfig: { NetworkMode: 'none', RestartPolicy: { Name: 'no' } },
  };
}

/** An emptyDir: a named engine volume (tmpfs for medium Memory), labelled like the pod's containers. */
export function volumeConfig(plan: PodPlan, volume: PodPlan['volumes'][number]): Docker.VolumeCreateOptions {
  return {
    Name: volumeName(plan.uid, volume.name),
    Driver: 'local',
    ...(volume.memory ? { DriverOpts: { type: 'tmpfs', device: 'tmpfs' } } : {}),
    Labels: identityLabels(plan),
  };
}
