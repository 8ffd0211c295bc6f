import { randomInt } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createKubeletApiHandler } from '../../functions/kubelet-api.ts';
import type { KubeletStreamingOptions } from '../kubelet-api/streaming/kubelet-streaming.ts';
import { createKubeletStreaming } from '../kubelet-api/streaming/streaming-entry.ts';
import type { CertificateAuthority } from './control-plane/pki.ts';
import { type KubeletApiFront, startKubeletApiFront } from './kubelet-api-front.ts';

/**
 * The kubelet API of a local deployment: each node gets its own loopback
 * address (the whole 127.0.0.0/8 is loopback on Linux), all served on one
 * port by the front, with a serving certificate signed by the cluster CA
 * for those addresses (so an API server with `--kubelet-certificate-authority`
 * verifies it), the cluster CA as the truststore, and the real
 * `functions/kubelet-api.ts` handler behind it.
 */

/** Distinct loopback addresses for `nodes`, in one random 127.x.y.0/24 so that concurrent runs rarely meet. */
export function localNodeAddresses(nodes: readonly string[]): Record<string, string> {
  if (nodes.length > 254) throw new Error('at most 254 local nodes have a kubelet API address');
  const prefix = `127.${randomInt(1, 255)}.${randomInt(0, 256)}`;
  return Object.fromEntries(nodes.map((node, i) => [node, `${prefix}.${i + 1}`]));
}

/** `node=address,...`, the form of SVK_KUBELET_API_ADDRESSES. */
export function addressesVariable(addresses: Readonly<Record<string, string>>): string {
  return Object.entries(addresses)
    .map(([node, address]) => `${node}=${address}`)
    .join(',');
}

export interface LocalKubeletApiOptions {
  /**
   * The functions' environment. SVK_KUBELET_API_ADDRESSES and SVK_KUBELET_PORT
   * are set on it (the handler reads it at its first request), so pass the
   * same object to the other functions: their nodes then publish these
   * addresses and the port.
   */
  env: Record<string, string | undefined>;
  nodes: readonly string[];
  /** The cluster CA: it signs the serving certificate, and client certificates must chain to it. */
  ca: CertificateAuthority;
  /** Where the serving certificate goes. */
  dir: string;
  /** Defaults to {@link localNodeAddresses}. */
  addresses?: Record<string, string>;
  /** Timeouts of exec, attach and port-forward connections (the kubelet's defaults otherwise). */
  streaming?: KubeletStreamingOptions;
}

export interface LocalKubeletApi extends KubeletApiFront {
  addresses: Record<string, string>;
  /** Exec, attach and port-forward connections open now. */
  liveStreams(): number;
}

export async function startLocalKubeletApi(options: LocalKubeletApiOptions): Promise<LocalKubeletApi> {
  const addresses = options.addresses ?? localNodeAddresses(options.nodes);
  mkdirSync(options.dir, { recursive: true });
  const files = await options.ca.issue(
    'kubelet-serving',
    {
      commonName: 'serverless-virtual-kubelet-kubelet-api',
      usage: 'server',
      altNames: Object.values(addresses).map((ip) => `IP:${ip}`),
    },
    options.dir,
  );
  const serving = { cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
  options.env.SVK_KUBELET_API_ADDRESSES = addressesVariable(addresses);
  const streaming = createKubeletStreaming(options.env, options.streaming);
  const front = await startKubeletApiFront({
    handler: createKubeletApiHandler(options.env),
    upgrade: (event, req, socket, head) => streaming.handleUpgrade(event, req, socket, head),
    addresses: Object.values(addresses),
    clientCa: readFileSync(options.ca.cert, 'utf8'),
    serving,
  });
  options.env.SVK_KUBELET_PORT = String(front.port);
  return {
    port: front.port,
    addresses,
    liveStreams: () => streaming.live(),
    stop: async () => {
      streaming.close();
      await front.stop();
    },
  };
}
