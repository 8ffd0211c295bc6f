import type { V1Container, V1Pod, V1SELinuxOptions } from '@kubernetes/client-node';
import type { DownwardApiOptions } from '../../kube/downward-api.ts';
import { expandEnv } from '../../kube/env-expansion.ts';
import { parseQuantity } from '../../kube/quantity.ts';
import { containerArgv } from '../container-command.ts';
import {
  type ContainerProbes,
  containerProbes,
  expandProbeCommands,
  hasProbesOrHooks,
} from '../container-probes.ts';
import { type FileVolume, fileVolume, isFileVolume, mountSubPath } from '../file-volumes.ts';
import { HOSTS_VOLUME, type PodIdentity, TERMINATION_VOLUME } from './names.ts';
import { podHostname } from './pod-hostname.ts';

/**
 * A pod as the Docker provider runs it: everything needed to create its
 * containers, taken from the pod spec once at create time. The plan is kept
 * on the engine, in the infra container's environment (see pod-plan-codec.ts),
 * because containers are created later than the pod (after their image is
 * pulled, after the init containers before them, at each restart) by
 * whichever invocation polls the pod next.
 */
export interface PodPlan extends PodIdentity {
  restartPolicy: RestartPolicy;
  /** The infra container's hostname, which every container of the pod shares (pod-hostname.ts). */
  hostname: string;
  /** The infra container's domain name: `<subdomain>.<namespace>.svc.<cluster domain>` beside a short hostname. */
  domainname?: string;
  initContainers: ContainerPlan[];
  containers: ContainerPlan[];
  /** The pod's volumes: one engine volume each, shared by the containers that mount it. */
  volumes: PlannedVolume[];
  /** Host ports published on the infra container (they belong to the pod's network namespace). */
  hostPorts: Array<{ containerPort: number; hostPort: number; protocol: string; hostIp?: string }>;
  dns?: { nameservers: string[]; searches: string[]; options: string[] };
  extraHosts: string[];
  /** The pod's hostAliases: its /etc/hosts is then written as the kubelet writes it (etc-hosts.ts). */
  hostAliases?: Array<{ ip: string; hostnames: string[] }>;
  sharePid: boolean;
  /** The pod's seLinuxOptions: the infra container's label where the engine host has SELinux. */
  seLinux?: SeLinuxLabel;
  /** The pod's fsGroup: the group of its volumes' files (fs-group.ts) and a supplementary group of every container. */
  fsGroup?: number;
  /**
   * The pod's terminationGracePeriodSeconds, reported back in the pod getPod
   * returns. A delete does not read it: a graceful one ends at its API
   * object's deletionTimestamp, one without a deletion timestamp kills at once.
   */
  gracePeriodSeconds: number;
  imagePullSecrets: string[];
}

/**
 * An engine volume of the pod: an emptyDir (tmpfs for medium Memory), or a
 * file volume (configMap, secret, downwardAPI, projected: always tmpfs),
 * whose sources it records, never their data (volume-delivery.ts fills it).
 */
export interface PlannedVolume {
  name: string;
  memory: boolean;
  /** What a configMap, secret, downwardAPI or projected volume holds. */
  files?: FileVolume;
  /**
   * Mounted in the infra container at HELD_VOLUMES_DIR (file volumes,
   * emptyDirs, the /etc/hosts of a pod with hostAliases): files and the
   * directory's mode reach it there through the engine API, and its
   * directory on the engine host is where subPath binds start.
   */
  held?: boolean;
}

/** An SELinux context's parts (seLinuxOptions), each set only when given. */
export interface SeLinuxLabel {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

/** The downward API's fields the pod gets only once it has an address: env resolved before then reads them empty. */
export const ADDRESS_FIELDS = ['status.podIP', 'status.podIPs', 'status.hostIP'] as const;
export type AddressField = (typeof ADDRESS_FIELDS)[number];

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export interface ContainerPlan {
  name: string;
  image: string;
  pullPolicy: PullPolicy;
  /** Kubernetes `command`, `$(VAR)` expanded (container-command.ts): replaces the image's entrypoint (and then its CMD too). */
  command?: string[];
  /** Kubernetes `args`, `$(VAR)` expanded: replaces the image's CMD. */
  args?: string[];
  workingDir?: string;
  /** `NAME=value`, resolved by the pipeline. */
  env: string[];
  /**
   * The variables of `env` that are the pod's or node's address (a fieldRef to one of ADDRESS_FIELDS) and
   * that the pipeline resolved empty, before the pod had one: set when the container is created, from the
   * infra container's address (instanceConfig).
   */
  addressEnv?: Array<{ name: string; field: AddressField }>;
  tty: boolean;
  stdin: boolean;
  stdinOnce: boolean;
  /** `subPath` (or `subPathExpr` expanded): the part of the volume mounted, relative, without `..`. */
  mounts: Array<{ volume: string; path: string; readOnly: boolean; subPath?: string }>;
  /** CPU limit in billionths of a CPU. */
  nanoCpus?: number;
  /** Memory limit in bytes. */
  memoryBytes?: number;
  /** CPU request as relative shares (the kubelet's 1024 per CPU, at least 2). */
  cpuShares?: number;
  /** `uid[:gid]`. */
  user?: string;
  groupAdd: string[];
  readOnlyRootfs: boolean;
  noNewPrivileges: boolean;
  capDrop: string[];
  /** The container's seLinuxOptions, else the pod's: its label where the engine host has SELinux. */
  seLinux?: SeLinuxLabel;
  /** Probes and lifecycle hooks, run by the node's prober (prober/prober-agent.ts); absent when none. */
  probes?: ContainerProbes;
  /**
   * Where the container writes its termination message (terminationMessagePath), and whether its log's
   * tail stands in for an empty one when it failed (FallbackToLogsOnError); absent when it has no path.
   */
  terminationMessage?: { path: string; fallbackToLogs: boolean };
}

/**
 * The plan of a supported pod (see unsupportedFields), bound to `node`, its
 * FQDN in `clusterDomain`; `downward` gives what downwardAPI volumes need of
 * the node.
 */
export function podPlan(
  pod: V1Pod,
  identity: PodIdentity,
  clusterDomain: string,
  downward: DownwardApiOptions = {},
): PodPlan {
  const spec = pod.spec;
  const dnsConfig = spec?.dnsConfig;
  const { hostname, domainname } = podHostname(pod, clusterDomain);
  const hostAliases = (spec?.hostAliases ?? []).map((a) => ({
    ip: a.ip ?? '',
    hostnames: a.hostnames ?? [],
  }));
  return {
    ...identity,
    restartPolicy: restartPolicy(spec?.restartPolicy),
    hostname,
    ...(domainname ? { domainname } : {}),
    initContainers: (spec?.initContainers ?? []).map((c) => containerPlan(c, pod)),
    containers: (spec?.containers ?? []).map((c) => containerPlan(c, pod)),
    volumes: [
      ...(spec?.volumes ?? []).flatMap((v): PlannedVolume[] => {
        // Held by the infra container, which sets its directory's mode and group (volumeRootEntry) and holds it.
        if (v.emptyDir) return [{ name: v.name, memory: v.emptyDir.medium === 'Memory', held: true }];
        if (!isFileVolume(v)) return [];
        const planned = fileVolume(v, pod, downward);
        if ('reasons' in planned) throw new Error(`pod-plan: ${planned.reasons.join('; ')}`);
        return [{ name: v.name, memory: true, files: planned.volume, held: true }];
      }),
      // Termination message files (termination-message.ts), in a volume no Kubernetes volume can be named.
      ...([...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].some((c) => c.terminationMessagePath)
        ? [{ name: TERMINATION_VOLUME, memory: false }]
        : []),
      ...(hostAliases.length > 0 ? [{ name: HOSTS_VOLUME, memory: false, held: true }] : []),
    ],
    hostPorts: (spec?.containers ?? []).flatMap((c) =>
      (c.ports ?? []).flatMap((p) =>
        p.hostPort
          ? [
              {
                containerPort: p.containerPort,
                hostPort: p.hostPort,
                protocol: (p.protocol ?? 'TCP').toLowerCase(),
                ...(p.hostIP ? { hostIp: p.hostIP } : {}),
              },
            ]
          : [],
      ),
    ),
    ...(dnsConfig
      ? {
          dns: {
            nameservers: dnsConfig.nameservers ?? [],
            searches: dnsConfig.searches ?? [],
            options: (dnsConfig.options ?? []).map((o) =>
              o.value ? `${o.name}:${o.value}` : (o.name ?? ''),
            ),
          },
        }
      : {}),
    extraHosts: (spec?.hostAliases ?? []).flatMap((a) => (a.hostnames ?? []).map((h) => `${h}:${a.ip}`)),
    ...(hostAliases.length > 0 ? { hostAliases } : {}),
    sharePid: spec?.shareProcessNamespace ?? false,
    ...seLinuxOf(spec?.securityContext?.seLinuxOptions),
    ...(spec?.securityContext?.fsGroup !== undefined ? { fsGroup: spec.securityContext.fsGroup } : {}),
    gracePeriodSeconds: spec?.terminationGracePeriodSeconds ?? 30,
    imagePullSecrets: (spec?.imagePullSecrets ?? []).flatMap((s) => (s.name ? [s.name] : [])),
  };
}

function containerPlan(c: V1Container, pod: V1Pod): ContainerPlan {
  const podSc = pod.spec?.securityContext;
  const sc = c.securityContext;
  const uid = sc?.runAsUser ?? podSc?.runAsUser;
  const gid = sc?.runAsGroup ?? podSc?.runAsGroup;
  const cpuLimit = quantity(c.resources?.limits?.cpu);
  const memoryLimit = quantity(c.resources?.limits?.memory);
  const cpuRequest = quantity(c.resources?.requests?.cpu);
  const probes = containerProbes(c);
  const { command, args } = containerArgv(c);
  const addressEnv = (c.env ?? []).flatMap((e) => {
    const field = ADDRESS_FIELDS.find((f) => f === e.valueFrom?.fieldRef?.fieldPath);
    return field && !e.value ? [{ name: e.name, field }] : [];
  });
  return {
    name: c.name,
    image: c.image ?? '',
    pullPolicy: pullPolicy(c.imagePullPolicy, c.image ?? ''),
    ...(command ? { command } : {}),
    ...(args ? { args } : {}),
    ...(c.workingDir ? { workingDir: c.workingDir } : {}),
    env: (c.env ?? []).map((e) => `${e.name}=${e.value ?? ''}`),
    ...(addressEnv.length > 0 ? { addressEnv } : {}),
    tty: c.tty ?? false,
    stdin: c.stdin ?? false,
    stdinOnce: c.stdinOnce ?? false,
    mounts: (c.volumeMounts ?? []).map((m) => {
      const sub = mountSubPath(m, c, expandEnv);
      if ('problem' in sub) throw new Error(`pod-plan: volumeMounts[${m.name}].subPath: ${sub.problem}`);
      // The kubelet mounts these volumes read-only whatever the mount says.
      const files = (pod.spec?.volumes ?? []).some((v) => v.name === m.name && isFileVolume(v));
      return {
        volume: m.name,
        path: m.mountPath,
        readOnly: files || (m.readOnly ?? false),
        ...(sub.subPath ? { subPath: sub.subPath } : {}),
      };
    }),
    ...(cpuLimit !== undefined ? { nanoCpus: Math.max(1, Math.round(cpuLimit * 1e9)) } : {}),
    ...(memoryLimit !== undefined ? { memoryBytes: Math.round(memoryLimit) } : {}),
    ...(cpuRequest !== undefined ? { cpuShares: Math.max(2, Math.round(cpuRequest * 1024)) } : {}),
    // The engine takes a group only beside a user: runAsGroup alone is refused (pod-support.ts).
    ...(uid !== undefined ? { user: gid !== undefined ? `${uid}:${gid}` : String(uid) } : {}),
    // The kubelet's order: fsGroup, then the supplemental groups.
    groupAdd: [
      ...(podSc?.fsGroup !== undefined ? [podSc.fsGroup] : []),
      ...(podSc?.supplementalGroups ?? []),
    ].map(String),
    readOnlyRootfs: sc?.readOnlyRootFilesystem ?? false,
    noNewPrivileges: sc?.allowPrivilegeEscalation === false,
    capDrop: sc?.capabilities?.drop ?? [],
    // The kubelet takes the container's seLinuxOptions whole when it has some, else the pod's.
    ...seLinuxOf(sc?.seLinuxOptions ?? podSc?.seLinuxOptions),
    ...(hasProbesOrHooks(probes) ? { probes: expandProbeCommands(probes, c) } : {}),
    ...(c.terminationMessagePath
      ? {
          terminationMessage: {
            path: c.terminationMessagePath,
            fallbackToLogs: c.terminationMessagePolicy === 'FallbackToLogsOnError',
          },
        }
      : {}),
  };
}

function seLinuxOf(options: V1SELinuxOptions | undefined): { seLinux?: SeLinuxLabel } {
  if (!options) return {};
  const label: SeLinuxLabel = {};
  for (const part of ['user', 'role', 'type', 'level'] as const) {
    const value = options[part];
    if (value) label[part] = value;
  }
  return Object.keys(label).length > 0 ? { seLinux: label } : {};
}

function restartPolicy(value: string | undefined): RestartPolicy {
  return value === 'Never' || value === 'OnFailure' ? value : 'Always';
}

/** The API server's default: Always for `:latest` or untagged images, IfNotPresent otherwise. */
export function pullPolicy(value: string | undefined, image: string): PullPolicy {
  if (value === 'Always' || value === 'IfNotPresent' || value === 'Never') return value;
  const lastPart = image.split('/').pop() ?? '';
  if (image.includes('@')) return 'IfNotPresent';
  return !lastPart.includes(':') || lastPart.endsWith(':latest') ? 'Always' : 'IfNotPresent';
}

function quantity(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const q = parseQuantity(String(value));
  return q ? Number(q.num) / Number(q.den) : undefined;
}
