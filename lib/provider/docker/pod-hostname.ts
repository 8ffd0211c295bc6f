import type { V1Pod } from '@kubernetes/client-node';

/**
 * A pod's hostname and domain as the kubelet derives them
 * (GeneratePodHostNameAndDomain and GetNodenameForKernel in kubernetes/pkg/kubelet):
 * `hostnameOverride` alone when set; else `hostname` or the pod name, cut to
 * 63 characters, in the domain `<subdomain>.<namespace>.svc.<cluster domain>`
 * when the pod has a subdomain (a StatefulSet's pods have its serviceName).
 * With `setHostnameAsFQDN` and a domain, the kernel hostname is the FQDN itself.
 */
export interface PodHostname {
  /** The kernel hostname, what `hostname` prints in every container: the engine's `Hostname`. */
  hostname: string;
  /**
   * The domain beside a short hostname: the engine's `Domainname`. Absent
   * without a subdomain, and when the hostname is the FQDN already.
   */
  domainname?: string;
  /** `<hostname>.<subdomain>.<namespace>.svc.<cluster domain>`, when the pod has a subdomain. */
  fqdn?: string;
}

/** Linux's nodename holds 64 characters; the kubelet refuses a longer FQDN as the hostname. */
export const FQDN_MAX_LENGTH = 64;
const HOSTNAME_MAX_LENGTH = 63;

export function podHostname(pod: V1Pod, clusterDomain: string): PodHostname {
  const spec = pod.spec;
  const name = pod.metadata?.name ?? '';
  // hostnameOverride sets the hostname alone: no domain, so setHostnameAsFQDN has nothing to add.
  if (spec?.hostnameOverride) return { hostname: truncated(spec.hostnameOverride) };
  const hostname = truncated(spec?.hostname || name);
  if (!spec?.subdomain) return { hostname };
  const domain = `${spec.subdomain}.${pod.metadata?.namespace ?? ''}.svc.${clusterDomain}`;
  const fqdn = `${hostname}.${domain}`;
  return spec.setHostnameAsFQDN ? { hostname: fqdn, fqdn } : { hostname, domainname: domain, fqdn };
}

/** Why the pod's hostname cannot be set, naming the field; undefined when it can. */
export function hostnameProblem(pod: V1Pod, clusterDomain: string): string | undefined {
  const { hostname, fqdn } = podHostname(pod, clusterDomain);
  if (fqdn === undefined || hostname !== fqdn || fqdn.length <= FQDN_MAX_LENGTH) return undefined;
  return `spec.setHostnameAsFQDN: the FQDN ${fqdn} is ${fqdn.length} characters, and a hostname holds at most ${FQDN_MAX_LENGTH} (the kubelet refuses it too)`;
}

/** The kubelet's cut of a long hostname: 63 characters, without a trailing `-` or `.`. */
function truncated(hostname: string): string {
  if (hostname.length <= HOSTNAME_MAX_LENGTH) return hostname;
  return hostname.slice(0, HOSTNAME_MAX_LENGTH).replace(/[-.]+$/, '');
}
