import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { errorMessage } from '../../util/error-message.ts';
import { ENV_REASONS, EnvResolveError } from './env-reasons.ts';
import type { EnvSources } from './env-sources.ts';

/**
 * Service links: the variables the kubelet gives every container for the
 * Services it may reach (pkg/kubelet/kubelet_pods.go getServiceEnvVarMap,
 * pkg/kubelet/envvars/envvars.go FromServices). With `enableServiceLinks`
 * (true unless false), every Service of the pod's namespace; always, the
 * master Service `kubernetes` of `default` (KUBERNETES_SERVICE_HOST...,
 * which in-cluster clients read), unless the pod's namespace has a Service
 * of that name, which then wins. Only Services with a cluster IP count
 * (not headless `None`, not ExternalName).
 *
 * Read once per resolution (a pod going to the provider): one list of the
 * pod's namespace and one of `default` narrowed to `kubernetes` by a field
 * selector (just the first when the pod is in `default`, just the second
 * without service links), RBAC `list` on services only.
 */

/** The namespace and name of the master Service (the kubelet's masterServiceNamespace and masterServices). */
export const MASTER_SERVICE = { namespace: 'default', name: 'kubernetes' } as const;

/** The service-link variables of `pod`, in a stable order (Services by name, then as FromServices lists them). */
export async function podServiceEnv(pod: V1Pod, sources: EnvSources): Promise<Map<string, string>> {
  const namespace = pod.metadata?.namespace ?? 'default';
  const links = pod.spec?.enableServiceLinks !== false;
  let own: readonly V1Service[] = [];
  let master: readonly V1Service[] = [];
  try {
    [own, master] = await Promise.all([
      links ? sources.services(namespace) : [],
      links && namespace === MASTER_SERVICE.namespace
        ? []
        : sources.services(MASTER_SERVICE.namespace, MASTER_SERVICE.name),
    ]);
  } catch (err) {
    throw new EnvResolveError(
      ENV_REASONS.createContainerConfigError,
      `failed to list services when setting up env vars: ${errorMessage(err)}`,
    );
  }
  const byName = new Map<string, V1Service>();
  for (const service of master) {
    if (service.metadata?.name === MASTER_SERVICE.name && hasClusterIp(service))
      byName.set(MASTER_SERVICE.name, service);
  }
  for (const service of own) {
    const name = service.metadata?.name;
    if (name && hasClusterIp(service)) byName.set(name, service);
  }
  const sorted = [...byName.keys()].sort().map((name) => byName.get(name) as V1Service);
  return new Map(serviceEnvVars(sorted));
}

/** The kubelet's IsServiceIPSet: a cluster IP that is neither empty nor `None`. */
function hasClusterIp(service: V1Service): boolean {
  const ip = service.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None';
}

/**
 * envvars.FromServices: for each Service, `<NAME>_SERVICE_HOST`,
 * `<NAME>_SERVICE_PORT` (the first port), `<NAME>_SERVICE_PORT_<PORT NAME>`
 * for each named port, and Docker's link variables `<NAME>_PORT`
 * (the first port's URL) and, per port, `<NAME>_PORT_<port>_<PROTO>` with
 * `_PROTO`, `_PORT` and `_ADDR`. Names upper-cased, `-` made `_`.
 */
export function serviceEnvVars(services: readonly V1Service[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const service of services) {
    const ip = service.spec?.clusterIP ?? '';
    const ports = service.spec?.ports ?? [];
    const first = ports[0];
    // Validation gives every Service with a cluster IP a port; one without could not be linked.
    if (!hasClusterIp(service) || !first) continue;
    const prefix = envName(service.metadata?.name ?? '');
    out.push([`${prefix}_SERVICE_HOST`, ip]);
    out.push([`${prefix}_SERVICE_PORT`, String(first.port)]);
    for (const port of ports) {
      if (port.name) out.push([`${prefix}_SERVICE_PORT_${envName(port.name)}`, String(port.port)]);
    }
    ports.forEach((port, i) => {
      const protocol = port.protocol || 'TCP';
      const url = `${protocol.toLowerCase()}://${joinHostPort(ip, port.port)}`;
      if (i === 0) out.push([`${prefix}_PORT`, url]);
      const portPrefix = `${prefix}_PORT_${port.port}_${protocol.toUpperCase()}`;
      out.push([portPrefix, url]);
      out.push([`${portPrefix}_PROTO`, protocol.toLowerCase()]);
      out.push([`${portPrefix}_PORT`, String(port.port)]);
      out.push([`${portPrefix}_ADDR`, ip]);
    });
  }
  return out;
}

/** envvars.makeEnvVariableName. */
function envName(name: string): string {
  return name.replaceAll('-', '_').toUpperCase();
}

/** Go's net.JoinHostPort: an IPv6 address in brackets. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
