import type { Dependencies } from '../app/dependencies.ts';
import type { KubeContext } from '../kube/kube-context.ts';
import { kubeClusterReviews } from './cluster-reviews.ts';
import type { KubeletApiDependencies } from './serve.ts';
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
 * @throws KubeletApiConfigError when no endpoint (domain or addresses) or API id is configured, or no client CA is known.
 */
export function kubeletApiDependencies(deps: Dependencies): KubeletApiDependencies {
  const { config } = deps;
  const endpoint = config.kubeletApi.endpoint;
  if (!endpoint) {
    throw new KubeletApiConfigError(
      'the kubelet API needs SVK_KUBELET_API_DOMAIN (AWS) or SVK_KUBELET_API_ADDRESSES (local) to tell its nodes apart',
    );
  }
  const { source } = config.kubeletApi;
  if (!source) {
    throw new KubeletApiConfigError(
      "the kubelet API needs SVK_KUBELET_API_ID, the id of the API Gateway REST API in front of it (set by infra/kubelet-api.yml; locally by the front): it serves only that API's events",
    );
  }
  const clientCas = parseCertificateBundle(clientCaPem(config.kubeletApi.clientCaPem, deps.kube.context));
  if (clientCas.length === 0) throw new KubeletApiConfigError('the client CA bundle holds no certificate');
  return {
    nodes: config.nodeNames,
    source,
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
