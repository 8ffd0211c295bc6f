import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CertificatesV1Api,
  CoordinationV1Api,
  CoreV1Api,
  createConfiguration,
  type HttpLibrary,
  KubeConfig,
  KubernetesObjectApi,
  type RequestContext,
  ResponseContext,
  ServerConfiguration,
  wrapHttpLibrary,
} from '@kubernetes/client-node';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './client.ts';
import { contextFromKubeConfig, type KubeContext } from './kube-context.ts';
import { KubeHttp } from './kube-http.ts';
import type { KubeRequest } from './kube-request.ts';
import { readWith } from './kubeconfig.ts';
import type { KubeRetryOptions } from './retrying-http.ts';

/**
 * Kubernetes clients for tooling, never for a function: tests, benchmarks,
 * the local control plane and scripts use `@kubernetes/client-node`'s whole
 * API (any call, any API group, its Watch and KubernetesObjectApi), sent
 * over our own HTTP layer (kube-http.ts: the same kept-alive connections,
 * timeouts, retries and request counting as the functions' clients). A test
 * in test/unit/function-imports.test.ts keeps this module out of every
 * function's static imports.
 */
export interface ToolingClients {
  /** client-node's KubeConfig of the kubeconfig file: other API groups (makeApiClient), Watch, YAML objects. */
  config: KubeConfig;
  /** Our context over the same KubeConfig: watchStream, rawGet, and the functions' clients. */
  context: KubeContext;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  authentication: AuthenticationV1Api;
  authorization: AuthorizationV1Api;
  /** CertificateSigningRequests (a serving certificate from the cluster's signer). */
  certificates: CertificatesV1Api;
  /** Requests sent by these clients (every attempt). */
  requests(): number;
}

/** client-node's HTTP library over ours: its typed APIs send through `http`. */
function httpLibraryOver(http: KubeHttp): HttpLibrary {
  return wrapHttpLibrary({
    async send(request: RequestContext): Promise<ResponseContext> {
      const body = request.getBody();
      if (body !== undefined && typeof body !== 'string') throw new Error('only JSON bodies are supported');
      const answer = await http.send({
        method: request.getHttpMethod() as KubeRequest['method'],
        // The request's URL starts with the context's server (the ServerConfiguration below).
        path: request.getUrl().slice(http.context.server.length),
        ...(body !== undefined ? { body } : {}),
        headers: request.getHeaders(),
      });
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(answer.headers)) {
        if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
      }
      return new ResponseContext(answer.status, headers, {
        text: async () => answer.body.toString('utf8'),
        binary: async () => answer.body,
      });
    },
  });
}

/**
 * The context of a kubeconfig file, loaded synchronously (tooling imports
 * client-node statically; the functions load it with loadKubeConfig).
 */
export function toolingContext(kubeconfigPath: string): KubeContext {
  return contextFromKubeConfig(readWith(KubeConfig, kubeconfigPath));
}

/** Tooling clients for a kubeconfig file's current context (see {@link ToolingClients}). */
export function createToolingClients(
  kubeconfigPath: string,
  options: { requestTimeoutMs?: number; retry?: KubeRetryOptions } = {},
): ToolingClients {
  const config = readWith(KubeConfig, kubeconfigPath);
  const context = contextFromKubeConfig(config);
  const http = new KubeHttp(context, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, options.retry);
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(context.server, {}),
    authMethods: {},
    httpApi: httpLibraryOver(http),
  });
  return {
    config,
    context,
    core: new CoreV1Api(configuration),
    coordination: new CoordinationV1Api(configuration),
    authentication: new AuthenticationV1Api(configuration),
    authorization: new AuthorizationV1Api(configuration),
    certificates: new CertificatesV1Api(configuration),
    requests: () => http.requests(),
  };
}

/** A client for arbitrary manifests (any apiVersion/kind), such as `infra/rbac.yaml`. */
export function createObjectClient(kc: KubeConfig): KubernetesObjectApi {
  return KubernetesObjectApi.makeApiClient(kc);
}
