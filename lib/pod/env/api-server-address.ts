import type { V1Service } from '@kubernetes/client-node';
import type { HostPort } from '../../util/host-port.ts';
import type { EnvSources } from './env-sources.ts';
import { MASTER_SERVICE } from './service-env.ts';

/**
 * Where a pod reaches the API server: the address the master Service
 * `default/kubernetes` stands for in its env (KUBERNETES_SERVICE_HOST,
 * KUBERNETES_SERVICE_PORT and the KUBERNETES_PORT* link variables, which
 * in-cluster clients read). A kubelet's pods reach the Service's cluster IP
 * through kube-proxy; pods of a virtual node run outside the cluster's
 * network, so the variables name an address they can reach instead:
 * SVK_POD_API_SERVER, else the API server of the functions' kubeconfig
 * (an EKS cluster's endpoint, say), unless that one is on loopback, which
 * no container reaches: then the Service as the API server has it.
 */

/** The default: the kubeconfig's API server, unless it is on loopback (then undefined: the Service as it is). */
export function apiServerOfKubeconfig(server: string): HostPort | undefined {
  const url = new URL(server);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1' || /^127\./.test(host)) return undefined;
  return { host, port: Number(url.port || 443) };
}

/** The master Service as pods are to reach it: `address` as its cluster IP and only port (named as its first). */
export function masterServiceAt(service: V1Service, address: HostPort): V1Service {
  const first = service.spec?.ports?.[0];
  return {
    ...service,
    spec: {
      ...service.spec,
      clusterIP: address.host,
      ports: [{ ...first, port: address.port, protocol: first?.protocol ?? 'TCP' }],
    },
  };
}

/** `sources` with the master Service `default/kubernetes` answered at `address`; unchanged without one. */
export function withApiServerAddress(sources: EnvSources, address: HostPort | undefined): EnvSources {
  if (!address) return sources;
  return {
    ...sources,
    services: async (namespace, name) => {
      const services = await sources.services(namespace, name);
      if (namespace !== MASTER_SERVICE.namespace) return services;
      return services.map((s) =>
        s.metadata?.name === MASTER_SERVICE.name && s.spec?.clusterIP && s.spec.clusterIP !== 'None'
          ? masterServiceAt(s, address)
          : s,
      );
    },
  };
}
