import type { V1NodeAddress } from '@kubernetes/client-node';

/**
 * Where kube-apiserver reaches the kubelet API of our nodes. It dials
 * `https://<address>:<port>` with the first of the Node's `status.addresses`
 * in its `--kubelet-preferred-address-types` order (1.20's default:
 * Hostname, InternalDNS, InternalIP, ExternalDNS, ExternalIP), and the
 * kubelet paths (`/pods`, `/stats/summary`) do not name the node: each node
 * needs an address of its own, and the function tells the node from the Host
 * header.
 *
 * - `domain` (AWS): each node is `<node>.<domain>`, one wildcard custom
 *   domain on API Gateway (port 443). Only DNS-type addresses are published:
 *   an IP would be dialled without SNI, which a name-routed front cannot
 *   answer, and with many distributions' `InternalIP,ExternalIP,Hostname`
 *   order any IP would win.
 * - `addresses` (local): each node its own address, published as InternalIP
 *   only, so that no unresolvable Hostname comes ahead of it in the 1.20
 *   default order. On loopback each node has an address of its own (all of
 *   127.0.0.0/8 is loopback); on an address the host has once (its address
 *   on a container bridge), nodes share it and each has a port of its own
 *   (`ports`), published as its daemon endpoint.
 */
export type KubeletApiEndpoint =
  | { kind: 'domain'; domain: string }
  | {
      kind: 'addresses';
      addresses: Readonly<Record<string, string>>;
      /** A node's own port; a node without one publishes the configured kubelet port. */
      ports?: Readonly<Record<string, number>>;
    };

/** The port API Gateway serves a custom domain on. */
export const API_GATEWAY_PORT = 443;

/** The hostname or address of `node` under `endpoint`. */
export function nodeHost(node: string, endpoint: KubeletApiEndpoint): string | undefined {
  return endpoint.kind === 'domain' ? `${node}.${endpoint.domain}` : endpoint.addresses[node];
}

/**
 * The addresses a Node publishes. Without a kubelet API it is the historical
 * pair (the configured InternalIP, and the node name as Hostname).
 */
export function nodeAddresses(
  node: string,
  endpoint: KubeletApiEndpoint | undefined,
  internalIp: string | undefined,
): V1NodeAddress[] {
  if (!endpoint) {
    return [
      ...(internalIp ? [{ type: 'InternalIP', address: internalIp }] : []),
      { type: 'Hostname', address: node },
    ];
  }
  const host = nodeHost(node, endpoint);
  if (!host) return [];
  if (endpoint.kind === 'addresses') return [{ type: 'InternalIP', address: host }];
  return ['Hostname', 'InternalDNS', 'ExternalDNS'].map((type) => ({ type, address: host }));
}

/** The port `node` publishes as its daemon endpoint: its own under `endpoint`, else `kubeletPort`. */
export function nodePort(
  node: string,
  endpoint: KubeletApiEndpoint | undefined,
  kubeletPort: number,
): number {
  return (endpoint?.kind === 'addresses' ? endpoint.ports?.[node] : undefined) ?? kubeletPort;
}

/**
 * Which of `nodes` a request names by the host it reached (without port,
 * lower-case) and, where nodes share an address, the port it reached; or
 * undefined, also when the host alone leaves two nodes to choose from.
 */
export function nodeForHost(
  host: string,
  nodes: readonly string[],
  endpoint: KubeletApiEndpoint,
  port?: number,
): string | undefined {
  const ports = endpoint.kind === 'addresses' ? endpoint.ports : undefined;
  const matching = nodes.filter((node) => {
    if (nodeHost(node, endpoint)?.toLowerCase() !== host) return false;
    const own = ports?.[node];
    return own === undefined || port === undefined || own === port;
  });
  return matching.length === 1 ? matching[0] : undefined;
}
