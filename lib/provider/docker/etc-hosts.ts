import type Docker from 'dockerode';
import { heldVolumePath } from './container-config.ts';
import { HOSTS_VOLUME, volumeName } from './names.ts';
import type { PodPlan } from './pod-plan.ts';
import { tarArchive } from './tar-archive.ts';
import { volumeMountpoint } from './volume-delivery.ts';

/**
 * The kubelet-managed `/etc/hosts` of a pod with `hostAliases`, as the
 * kubelet writes it (pkg/kubelet/kubelet_pods.go managedHostsFileContent and
 * hostsEntriesFromHostAliases): localhost lines, the pod's own line, then
 * under `# Entries added by HostAliases.` one line per alias with all its
 * hostnames, tab-separated. The engines' own hosts file (ExtraHosts) has one
 * line per hostname, so for such a pod the file is written here, once the
 * infra container has the pod's IP, into the pod's `etc_hosts` volume (a
 * name no Kubernetes volume can have), and bind-mounted at /etc/hosts in
 * each container. A pod without hostAliases keeps the engine's file.
 */

const FILE = 'hosts';

export function managedHostsFile(
  podIps: readonly string[],
  hostname: string,
  domainname: string | undefined,
  aliases: ReadonlyArray<{ ip: string; hostnames: readonly string[] }>,
): string {
  const lines = [
    '# Kubernetes-managed hosts file.',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
    ...podIps.map((ip) =>
      domainname ? `${ip}\t${hostname}.${domainname}\t${hostname}` : `${ip}\t${hostname}`,
    ),
  ];
  if (aliases.length > 0) {
    lines.push('', '# Entries added by HostAliases.');
    for (const alias of aliases) lines.push(`${alias.ip}\t${alias.hostnames.join('\t')}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Writes the pod's hosts file (again: the same content for the same IP) and resolves with the bind that
 * mounts it at /etc/hosts; undefined for a pod without hostAliases, or one whose infra container has no IP.
 */
export async function etcHostsBind(
  docker: Docker,
  plan: PodPlan,
  infra: { id: string; ip?: string },
  mountpoints: Map<string, string>,
  now: Date,
): Promise<string | undefined> {
  if (!plan.hostAliases?.length || !plan.volumes.some((v) => v.name === HOSTS_VOLUME) || !infra.ip)
    return undefined;
  const content = Buffer.from(managedHostsFile([infra.ip], plan.hostname, plan.domainname, plan.hostAliases));
  await docker
    .getContainer(infra.id)
    .putArchive(tarArchive([{ type: 'file', name: FILE, mode: 0o644, content }], now), {
      path: heldVolumePath(HOSTS_VOLUME),
    });
  const mountpoint = await volumeMountpoint(docker, volumeName(plan.uid, HOSTS_VOLUME), mountpoints);
  return `${mountpoint}/${FILE}:/etc/hosts`;
}
