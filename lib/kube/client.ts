/**
 * The only place that builds Kubernetes clients, and the one place that knows
 * how `@kubernetes/client-node` 1.x reports API errors.
 */
import {
  ApiException,
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  createConfiguration,
  KubeConfig,
  KubernetesObjectApi,
  ServerConfiguration,
  VersionApi,
  Watch,
} from '@kubernetes/client-node';
import { errorMessage } from '../util/error-message.ts';
import { keepAliveAuthentication } from './keep-alive.ts';
import { type KubeRetryOptions, retryingHttpLibrary } from './retrying-http.ts';

/** Default bound on one API request: a hung connection must not stall a heartbeat. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/** Where a kubeconfig comes from: a file, inline YAML (e.g. from configuration), or the client's default lookup. */
export type KubeConfigSource = { kubeconfigPath: string } | { kubeconfigYaml: string } | { default: true };

/** A kubeconfig could not be loaded or names no usable cluster. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/**
 * Loads a kubeconfig. `{ default: true }` follows the client's own lookup
 * (KUBECONFIG, ~/.kube/config, in-cluster service account).
 * @throws KubeConfigError when the source cannot be read or parsed, or its
 * current context names no cluster with a server URL.
 */
export function loadKubeConfig(source: KubeConfigSource): KubeConfig {
  const kc = new KubeConfig();
  const from =
    'kubeconfigPath' in source
      ? `kubeconfig ${source.kubeconfigPath}`
      : 'kubeconfigYaml' in source
        ? 'inline kubeconfig'
        : 'default kubeconfig';
  try {
    if ('kubeconfigPath' in source) kc.loadFromFile(source.kubeconfigPath);
    else if ('kubeconfigYaml' in source) kc.loadFromString(source.kubeconfigYaml);
    else kc.loadFromDefault();
  } catch (err) {
    throw new KubeConfigError(`cannot load ${from}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) {
    throw new KubeConfigError(`${from}: current context "${kc.getCurrentContext()}" names no cluster server`);
  }
  return kc;
}

/** The typed API clients the virtual kubelet uses, all sharing one kubeconfig. */
export interface KubeClients {
  config: KubeConfig;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  /** TokenReview: the kubelet API authenticates bearer tokens as a kubelet in webhook mode does. */
  authentication: AuthenticationV1Api;
  /** SubjectAccessReview: the kubelet API authorizes every request as a kubelet in webhook mode does. */
  authorization: AuthorizationV1Api;
  /**
   * API requests these clients have sent, counted by the HTTP layer
   * (retrying-http.ts) as each attempt goes out (a failed, timed-out or
   * retried request counts each time), for tests and benchmarks.
   */
  requests(): number;
  /** Clients on the same cluster with the same timeout, counting their own requests from 0 (e.g. one node's). */
  withOwnCount(): KubeClients;
}

/**
 * Builds the API clients for one kubeconfig. Cheap; build once per cold start
 * and reuse: their requests share kept-alive connections. Every attempt is
 * aborted after `requestTimeoutMs` (without it, a
 * connection to an API server that stopped answering hangs until the
 * invocation's deadline) or at the invocation's deadline, and 429 and 5xx
 * answers are retried with bounded backoff (see retrying-http.ts).
 */
export function createKubeClients(
  kc: KubeConfig,
  options: { requestTimeoutMs?: number; retry?: KubeRetryOptions } = {},
): KubeClients {
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  let sent = 0;
  const configuration = configurationFor(kc, timeoutMs, options.retry, () => {
    sent++;
  });
  return {
    config: kc,
    core: new CoreV1Api(configuration),
    coordination: new CoordinationV1Api(configuration),
    authentication: new AuthenticationV1Api(configuration),
    authorization: new AuthorizationV1Api(configuration),
    requests: () => sent,
    withOwnCount: () =>
      createKubeClients(kc, {
        requestTimeoutMs: timeoutMs,
        ...(options.retry ? { retry: options.retry } : {}),
      }),
  };
}

/**
 * client-node's configuration over our HTTP layer (retrying-http.ts): every
 * attempt of every request goes through it, per-call options
 * (setHeaderOptions) included, and is counted by `onRequest` as it goes out.
 */
function configurationFor(
  kc: KubeConfig,
  timeoutMs: number,
  retry: KubeRetryOptions = {},
  onRequest: () => void = () => {},
) {
  const server = kc.getCurrentCluster()?.server;
  if (!server)
    throw new KubeConfigError(`current context "${kc.getCurrentContext()}" names no cluster server`);
  const base = {
    baseServer: new ServerConfiguration(server, {}),
    // Reuses connections (client-node would open a new one per request): see keep-alive.ts.
    authMethods: { default: keepAliveAuthentication(kc) },
  };
  // The client's own fetch library, under per-attempt timeouts, the invocation's deadline and retries.
  const fetchLibrary = createConfiguration(base).httpApi;
  return createConfiguration({
    ...base,
    httpApi: retryingHttpLibrary(fetchLibrary, timeoutMs, { ...retry, onAttempt: onRequest }),
  });
}

/**
 * Whether the kubeconfig's API server answers at all within `timeoutMs`: any
 * HTTP answer counts (401 and 403 too), a connection or TLS failure does not.
 * For tooling that picks a cluster (`npm start`).
 */
export async function isApiServerReachable(kc: KubeConfig, timeoutMs = 3_000): Promise<boolean> {
  try {
    await new VersionApi(configurationFor(kc, timeoutMs, { maxAttempts: 1 })).getCode();
    return true;
  } catch (err) {
    return apiStatusCode(err) !== undefined;
  }
}

/**
 * A client for arbitrary manifests (any apiVersion/kind), for tooling that
 * applies YAML such as `infra/rbac.yaml`; the virtual kubelet itself uses
 * the typed clients of {@link createKubeClients}.
 */
export function createObjectClient(kc: KubeConfig): KubernetesObjectApi {
  return KubernetesObjectApi.makeApiClient(kc);
}

/**
 * The HTTP status of a Kubernetes API error, or undefined when `err` is not
 * one. Understands the three shapes client-node 1.x produces: `ApiException`
 * from the typed and object clients (`code`), the `Error` a failed `Watch`
 * request rejects with (`statusCode`), and a `Status` object delivered as a
 * watch ERROR event (`kind: 'Status'`, `code`).
 */
export function apiStatusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  if (typeof err !== 'object' || err === null) return undefined;
  if ('statusCode' in err && typeof err.statusCode === 'number') return err.statusCode;
  if ('kind' in err && err.kind === 'Status' && 'code' in err && typeof err.code === 'number')
    return err.code;
  return undefined;
}

/** 404: the object (or the API it lives in) does not exist. */
export function isNotFound(err: unknown): boolean {
  return apiStatusCode(err) === 404;
}

/** 409: resourceVersion precondition failed, or the object already exists on create. */
export function isConflict(err: unknown): boolean {
  return apiStatusCode(err) === 409;
}

/** 410: a list or watch resourceVersion is too old; relist. */
export function isGone(err: unknown): boolean {
  return apiStatusCode(err) === 410;
}

/** 403: the identity is authenticated but RBAC (or admission) refuses the request. */
export function isForbidden(err: unknown): boolean {
  return apiStatusCode(err) === 403;
}

/** Query parameters of a watch request (`watch=true` is added). */
export type WatchQuery = Record<string, string | number | boolean | undefined>;

/**
 * Streams one watch request on `path` (e.g. `/api/v1/pods`), calling
 * `onEvent` synchronously and in order for each event (`ADDED`, `MODIFIED`,
 * `DELETED`, `BOOKMARK`, or `ERROR` with a Status object). Resolves when the
 * server ends the stream (at `timeoutSeconds`) or `signal` aborts; no event is
 * delivered after that. Rejects when the request fails: apiStatusCode() of the
 * error is the HTTP status when the server refused the watch.
 */
export function watchStream(
  kc: KubeConfig,
  path: string,
  query: WatchQuery,
  onEvent: (type: string, object: unknown) => void,
  signal: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    let controller: AbortController | undefined;
    let settled = false;
    const settle = (err: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      controller?.abort();
      // Aborting makes the client report an AbortError: that is our stop, not a failure.
      if (err && !signal.aborted) reject(err);
      else resolve();
    };
    const onAbort = () => settle(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    new Watch(kc)
      .watch(
        path,
        query,
        (type: string, object: unknown) => {
          if (!settled) onEvent(type, object);
        },
        (err: unknown) => settle(err),
      )
      .then(
        (c) => {
          controller = c;
          if (settled) c.abort();
        },
        (err: unknown) => settle(err),
      );
  });
}
