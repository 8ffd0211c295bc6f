import { Readable } from 'node:stream';
import type { Dependencies } from '../app/dependencies.ts';
import type { KubeContext } from '../kube/kube-context.ts';
import { kubeClusterReviews } from './cluster-reviews.ts';
import { isKubeletApiEventError, parseKubeletApiEvent } from './kubelet-api-request.ts';
import { textResponse } from './responses.ts';
import { type KubeletApiDependencies, serveKubeletApi } from './serve.ts';

import { TtlCache } from './ttl-cache.ts';
import { parseCertificateBundle } from './x509-identity.ts';

/** The kubelet API is not configured; the message says what to set. */
export class KubeletApiConfigError extends Error {
  override readonly name = 'KubeletApiConfigError';
}

/**
 * The CA bundle client certificates are verified against: the configured
 * one, else the cluster CA of the kubeconfig (on kubeadm and EKS the API
 * server's kubelet client certificate is signed by it).
 */
function clientCaPem(configured: string | undefined, context: KubeContext): string {
  if (configured) return configured;
  if (context.ca) return context.ca.toString('utf8');
  throw new KubeletApiConfigError(
    'no client CA: the kubeconfig names no cluster CA; set SVK_KUBELET_API_CLIENT_CA_DATA to the CA that signs the API server kubelet client certificate',
  );
}

/**
 * The kubelet API's dependencies from the function's.
 * @throws KubeletApiConfigError when no endpoint (domain or addresses) is configured or no client CA is known.
 */
export function kubeletApiDependencies(deps: Dependencies): KubeletApiDependencies {
  const { config } = deps;
  const endpoint = config.kubeletApi.endpoint;
  if (!endpoint) {
    throw new KubeletApiConfigError(
      'the kubelet API needs SVK_KUBELET_API_DOMAIN (AWS) or SVK_KUBELET_API_ADDRESSES (local) to tell its nodes apart',
    );
  }
  const clientCas = parseCertificateBundle(clientCaPem(config.kubeletApi.clientCaPem, deps.kube.context));
  if (clientCas.length === 0) throw new KubeletApiConfigError('the client CA bundle holds no certificate');
  return {
    nodes: config.nodeNames,
    endpoint,
    clientCas,
    reviews: kubeClusterReviews(deps.kube, deps.clock),
    kube: deps.kube,
    podProvider: deps.podProvider,
    clock: deps.clock,
    log: deps.log,
    followMaxMs: config.kubeletApi.followMaxMs,
    requestTimeoutMs: config.kube.requestTimeoutMs,
    startTimes: new TtlCache(deps.clock),
  };
}

/** What middy's streamify execution mode writes: metadata, then the body as a string or a byte stream. */
export interface StreamedResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string | Readable;
}

/**
 * One API Gateway event: a malformed event is answered 400 naming what is
 * wrong, an unexpected failure 500 (and logged), never a hung request.
 */
export async function kubeletApi(
  event: unknown,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<StreamedResponse> {
  let response: Awaited<ReturnType<typeof serveKubeletApi>>;
  try {
    response = await serveKubeletApi(parseKubeletApiEvent(event), deps, signal);
  } catch (err) {
    if (isKubeletApiEventError(err)) response = textResponse(400, err.message);
    else {
      deps.log.error({ err }, 'kubelet API request failed');
      response = textResponse(500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const { body } = response;
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    body: typeof body === 'string' ? body : Readable.from(body, { objectMode: false }),
  };
}
