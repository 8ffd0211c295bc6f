import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createKubeletApiHandler } from '../../functions/kubelet-api.ts';
import type { KubeletStreamingOptions } from '../kubelet-api/streaming/kubelet-streaming.ts';
import type { CertificateAuthority } from './control-plane/pki.ts';
import { type KubeletApiFront, startKubeletApiFront } from './kubelet-api-front.ts';
import { createKubeletStreaming } from './local-kubelet-streaming.ts';

/**
 * The kubelet API of a local deployment: one front per node, all handing
 * their requests to one real `functions/kubelet-api.ts` handler. Where the
 * nodes listen:
 * - on loopback (an API server on this machine), each node at its own
 *   127.x address (the whole 127.0.0.0/8 is loopback on Linux), one port;
 * - on one address of this host (an API server in a container or elsewhere
 *   reaches the host at one address), each node on its own port.
 * Each node's serving certificate names its address, so an API server with
 * `--kubelet-certificate-authority` can verify it.
 */

/** Distinct loopback addresses for `nodes`, in one random 127.x.y.0/24 so that concurrent runs rarely meet. */
export function localNodeAddresses(nodes: readonly string[]): Record<string, string> {
  if (nodes.length > 254) throw new Error('at most 254 local nodes have a kubelet API address');
  const prefix = `127.${randomInt(1, 255)}.${randomInt(0, 256)}`;
  return Object.fromEntries(nodes.map((node, i) => [node, `${prefix}.${i + 1}`]));
}

/** `node=address:port,...`, the form of SVK_KUBELET_API_ADDRESSES. */
export function addressesVariable(
  addresses: Readonly<Record<string, string>>,
  ports: Readonly<Record<string, number>> = {},
): string {
  return Object.entries(addresses)
    .map(([node, address]) => `${node}=${address}${ports[node] ? `:${ports[node]}` : ''}`)
    .join(',');
}

/** A serving certificate and its key, PEM. */
export interface ServingPem {
  cert: string;
  key: string;
}

/** The serving certificate of `node` for `address`. */
export type ServingCertificates = (node: string, address: string) => Promise<ServingPem>;

/**
 * Who vouches for the fronts: a CA of ours that signs each node's serving
 * certificate and is also the client CA (the local control plane's), or
 * serving certificates from elsewhere and the client CA as PEM (a cluster
 * `npm start` joined).
 */
export type LocalKubeletApiTrust =
  | {
      /** Signs the serving certificates; client certificates must chain to it. */
      ca: CertificateAuthority;
      /** Where the serving certificates go. */
      dir: string;
    }
  | {
      serving: ServingCertificates;
      /** PEM of the CA(s) client certificates must chain to. */
      clientCa: string;
    };

export type LocalKubeletApiOptions = LocalKubeletApiTrust & {
  /**
   * The functions' environment. SVK_KUBELET_API_ADDRESSES, SVK_KUBELET_PORT,
   * SVK_KUBELET_API_ID and SVK_KUBELET_API_STAGE are set on it (the handler reads it at its first request), so pass the
   * same object to the other functions: their nodes then publish these
   * addresses and ports.
   */
  env: Record<string, string | undefined>;
  /**
   * The kubelet API's own identity (SVK_KUBECONFIG of its handler only, as
   * deployed: infra/rbac.yaml's `serverless-virtual-kubelet-kubelet-api`);
   * by default env's.
   */
  kubeconfig?: string;
  nodes: readonly string[];
  /** One address of this host for every node, each on its own port; by default each node's own loopback address. */
  address?: string;
  /** Timeouts of exec, attach and port-forward connections (the kubelet's defaults otherwise). */
  streaming?: KubeletStreamingOptions;
};

export interface LocalKubeletApi {
  /** Each node's address. */
  addresses: Record<string, string>;
  /** Each node's port. */
  ports: Record<string, number>;
  /** The first node's port: every node's on loopback. */
  port: number;
  /** Exec, attach and port-forward connections open now. */
  liveStreams(): number;
  stop(): Promise<void>;
}

export async function startLocalKubeletApi(options: LocalKubeletApiOptions): Promise<LocalKubeletApi> {
  const { nodes } = options;
  const shared = options.address;
  const addresses = shared ? Object.fromEntries(nodes.map((n) => [n, shared])) : localNodeAddresses(nodes);
  const { serving, clientCa } = trust(options);
  // As API Gateway names its REST API: the handler serves only the events of this id and stage.
  const source = { apiId: `local${randomBytes(5).toString('hex')}`, stage: 'local' };
  options.env.SVK_KUBELET_API_ID = source.apiId;
  options.env.SVK_KUBELET_API_STAGE = source.stage;
  // The handler's own environment: the functions', with its own identity when given.
  const env = options.kubeconfig ? { ...options.env, SVK_KUBECONFIG: options.kubeconfig } : options.env;
  const handler = createKubeletApiHandler(env);
  // The upgrades the fronts take themselves (exec, attach, port-forward), served from the same environment.
  const streaming = createKubeletStreaming(env, options.streaming);
  const fronts: KubeletApiFront[] = [];
  const ports: Record<string, number> = {};
  try {
    for (const node of nodes) {
      const address = addresses[node] ?? '';
      // On loopback every node takes the first one's port; on a shared address each its own.
      const port = shared ? 0 : (fronts[0]?.port ?? 0);
      const front = await startKubeletApiFront({
        handler,
        upgrade: (event, req, socket, head) => streaming.handleUpgrade(event, req, socket, head),
        addresses: [address],
        port,
        clientCa,
        source,
        serving: await serving(node, address),
      });
      fronts.push(front);
      ports[node] = front.port;
    }
  } catch (err) {
    streaming.close();
    await Promise.all(fronts.map((f) => f.stop()));
    throw err;
  }
  const port = fronts[0]?.port ?? 0;
  for (const e of new Set([options.env, env])) {
    e.SVK_KUBELET_API_ADDRESSES = addressesVariable(addresses, ports);
    e.SVK_KUBELET_PORT = String(port);
  }
  return {
    addresses,
    ports,
    port,
    liveStreams: () => streaming.live(),
    stop: async () => {
      streaming.close();
      await Promise.all(fronts.map((f) => f.stop()));
    },
  };
}

function trust(options: LocalKubeletApiTrust): { serving: ServingCertificates; clientCa: string } {
  if ('serving' in options) return options;
  const { ca, dir } = options;
  mkdirSync(dir, { recursive: true });
  return {
    clientCa: readFileSync(ca.cert, 'utf8'),
    serving: async (node, address) => {
      const files = await ca.issue(
        `kubelet-serving-${node}`,
        { commonName: `system:node:${node}`, usage: 'server', altNames: [`IP:${address}`] },
        dir,
      );
      return { cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
    },
  };
}
