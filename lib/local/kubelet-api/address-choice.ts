/**
 * Where the local kubelet API listens for a cluster `npm start` joined: an
 * address its API server can dial from where it runs, which the kubeconfig
 * does not tell. A kubeconfig pointing at 127.0.0.1 is often a port-forward
 * into a container (kind, k3d, minikube), whose API server dials from inside
 * that container, where this host's loopback is not reachable. So the API
 * server's own advertised address (the `default/kubernetes` Endpoints) is
 * asked first, then the kubeconfig's:
 * - an override wins;
 * - an API server on loopback or on an address of this host runs here: each
 *   node on its own loopback address;
 * - otherwise the host's address on the route to the API server: on a
 *   container engine's bridge when it runs in a container, else the
 *   interface towards it.
 * Pure: the caller gathers the facts (host-network.ts).
 */

/** An interface address of this host. */
export interface HostAddress {
  address: string;
  device: string;
}

/** How this host reaches an address (`ip route get`): from `source` over `device`. */
export interface Route {
  source: string;
  device: string;
  /** `device` is a bridge (a container engine's, as docker0, podman0, kind's br-…). */
  bridge: boolean;
}

export interface ApiServerWhereabouts {
  /** The address the user named (SVK_LOCAL_KUBELET_API_ADDRESS), if any. */
  override?: string;
  /** The addresses the API server advertises (the `kubernetes` Service's endpoints), when readable. */
  advertised: readonly string[];
  /** The kubeconfig's server host, resolved to addresses. */
  kubeconfig: readonly string[];
  /** This host's addresses. */
  host: readonly HostAddress[];
  /** Routes from this host to the addresses above, where one exists. */
  routes: Readonly<Record<string, Route>>;
}

export type AddressChoice =
  /** `loopback`: each node at its own 127.x address; else every node on `address`, a port each. */
  | { kind: 'loopback'; reason: string }
  | { kind: 'address'; address: string; reason: string }
  | { kind: 'none'; reason: string };

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

export function isIpv4(address: string): boolean {
  return IPV4.test(address);
}

export function isLoopback(address: string): boolean {
  return (isIpv4(address) && address.startsWith('127.')) || address === '::1';
}

/** The address of the local kubelet API, and why (see the module comment). */
export function chooseKubeletApiAddress(where: ApiServerWhereabouts): AddressChoice {
  if (where.override !== undefined) return chosenOverride(where.override, where.host);
  const [target, source] = where.advertised.length
    ? [where.advertised.find(isIpv4) ?? where.advertised[0], 'the API server advertises']
    : [where.kubeconfig.find(isIpv4) ?? where.kubeconfig[0], "the kubeconfig's server is at"];
  if (target === undefined) {
    return {
      kind: 'none',
      reason:
        'the API server advertises no address and the kubeconfig names none that resolves: set SVK_LOCAL_KUBELET_API_ADDRESS to an address of this host that it can reach',
    };
  }
  if (isLoopback(target)) {
    return {
      kind: 'loopback',
      reason: `${source} ${target}, loopback: it runs on this host${
        where.advertised.length
          ? ''
          : ' (a port-forward into a container needs SVK_LOCAL_KUBELET_API_ADDRESS)'
      }`,
    };
  }
  const own = where.host.find((h) => h.address === target);
  if (own) {
    return {
      kind: 'loopback',
      reason: `${source} ${target}, this host's address on ${own.device}: it runs here`,
    };
  }
  if (!isIpv4(target)) {
    return {
      kind: 'none',
      reason: `${source} ${target}, not IPv4: set SVK_LOCAL_KUBELET_API_ADDRESS to an IPv4 address of this host it can reach`,
    };
  }
  const route = where.routes[target];
  if (!route) {
    return {
      kind: 'none',
      reason: `${source} ${target} and this host has no route to it: set SVK_LOCAL_KUBELET_API_ADDRESS`,
    };
  }
  const how = route.bridge
    ? `the host's address on bridge ${route.device}: it runs in a container`
    : `the host's address on the route to it (${route.device})`;
  return { kind: 'address', address: route.source, reason: `${source} ${target}; ${how}` };
}

function chosenOverride(address: string, host: readonly HostAddress[]): AddressChoice {
  if (isLoopback(address)) return { kind: 'loopback', reason: 'SVK_LOCAL_KUBELET_API_ADDRESS is loopback' };
  if (!isIpv4(address)) {
    return { kind: 'none', reason: `SVK_LOCAL_KUBELET_API_ADDRESS=${address} is not an IPv4 address` };
  }
  if (!host.some((h) => h.address === address)) {
    return { kind: 'none', reason: `SVK_LOCAL_KUBELET_API_ADDRESS=${address} is no address of this host` };
  }
  return { kind: 'address', address, reason: 'SVK_LOCAL_KUBELET_API_ADDRESS' };
}
