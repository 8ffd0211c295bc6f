import Docker from 'dockerode';

/**
 * The host's address on an engine's bridge network (its gateway), where a
 * container reaches a service of the engine host: the local control plane
 * serves pods there (SVK_POD_API_SERVER). Both engines report it in the
 * network's IPAM configuration. Undefined when the network has no IPv4
 * gateway (`host`, `none`).
 */
export async function bridgeGateway(socketPath: string, network: string): Promise<string | undefined> {
  const docker = new Docker({ socketPath });
  const info = (await docker.getNetwork(network).inspect()) as {
    IPAM?: { Config?: Array<{ Gateway?: string }> };
  };
  return info.IPAM?.Config?.map((c) => c.Gateway).find(
    (g): g is string => g !== undefined && /^\d{1,3}(\.\d{1,3}){3}$/.test(g),
  );
}
