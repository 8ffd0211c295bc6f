/**
 * The only place that builds Kubernetes clients: our own small client over
 * node:https (kube-http.ts), with client-node's call shapes, and its answers
 * read by client-node's ObjectSerializer (core-api.ts, group-apis.ts,
 * typed-calls.ts), so that no function imports `@kubernetes/client-node`
 * with itself (its types only: they are erased at build): importing all of
 * client-node costs a function about 115 ms of CPU at cold start, and the
 * serializer is loaded by a dynamic import at the first answer.
 */
import { CoreApi } from './core-api.ts';
import { AuthenticationApi, AuthorizationApi, CoordinationApi } from './group-apis.ts';
import type { KeepAliveOptions } from './keep-alive.ts';
import { type KubeContext, loadKubeContext } from './kube-context.ts';
import { KubeApiError } from './kube-errors.ts';
import { attemptSignal, KubeHttp, sendOnce } from './kube-http.ts';
import type { KubeConfigSource } from './kubeconfig.ts';
import type { KubeRetryOptions } from './retrying-http.ts';

export type { CoreApi } from './core-api.ts';
export type { KubeContext } from './kube-context.ts';
export { KubeConfigError, type KubeConfigSource } from './kubeconfig.ts';

/** Default bound on one API request: a hung connection must not stall a heartbeat. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/**
 * Loads a kubeconfig's current context. `{ default: true }` looks where
 * kubectl does (KUBECONFIG, ~/.kube/config, the in-cluster service account).
 * client-node's KubeConfig parses and authenticates it (kubeconfig.ts),
 * imported on the first load.
 * @throws KubeConfigError when the source cannot be read or parsed, or its
 * current context names no usable cluster.
 */
export function loadKubeConfig(
  source: KubeConfigSource,
  options: { keepAlive?: KeepAliveOptions; reload?: () => Promise<KubeContext> } = {},
): Promise<KubeContext> {
  return loadKubeContext(source, options);
}

/** The typed API clients the virtual kubelet uses, all on one context. */
export interface KubeClients {
  /** The API server and identity; watchStream and rawGet take it. */
  context: KubeContext;
  core: CoreApi;
  coordination: CoordinationApi;
  /** TokenReview: the kubelet API authenticates bearer tokens as a kubelet in webhook mode does. */
  authentication: AuthenticationApi;
  /** SubjectAccessReview: the kubelet API authorizes every request as a kubelet in webhook mode does. */
  authorization: AuthorizationApi;
  /**
   * API requests these clients have sent, counted by the HTTP layer
   * (kube-http.ts) as each attempt goes out (a failed, timed-out or
   * retried request counts each time), for tests and benchmarks. Watches
   * and raw reads on the context are not these clients' requests.
   */
  requests(): number;
  /** Clients on the same context with the same options, counting their own requests from 0 (e.g. one node's). */
  withOwnCount(): KubeClients;
}

/**
 * Builds the API clients for one context. Cheap; build once per cold start
 * and reuse: requests share the context's kept-alive connections. Every
 * attempt is aborted after `requestTimeoutMs` (without it, a connection to an
 * API server that stopped answering hangs until the invocation's deadline)
 * or at the invocation's deadline, and 429 and 5xx answers are retried with
 * bounded backoff (see retrying-http.ts).
 */
export function createKubeClients(
  context: KubeContext,
  options: { requestTimeoutMs?: number; retry?: KubeRetryOptions } = {},
): KubeClients {
  const http = new KubeHttp(context, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, options.retry);
  return {
    context,
    core: new CoreApi(http),
    coordination: new CoordinationApi(http),
    authentication: new AuthenticationApi(http),
    authorization: new AuthorizationApi(http),
    requests: () => http.requests(),
    withOwnCount: () => createKubeClients(context, options),
  };
}

/**
 * Whether the context's API server answers at all within `timeoutMs`: any
 * HTTP answer counts (401 and 403 too), a connection or TLS failure does not.
 * For tooling that picks a cluster (`npm start`).
 */
export async function isApiServerReachable(context: KubeContext, timeoutMs = 3_000): Promise<boolean> {
  const { signal, done } = attemptSignal(timeoutMs);
  try {
    await sendOnce(context, { method: 'GET', path: '/version' }, signal);
    return true;
  } catch {
    return false;
  } finally {
    done();
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * The HTTP status of a Kubernetes API error, or undefined when `err` is not
 * one. Understands our KubeApiError (typed clients and refused watches), a
 * `Status` object delivered as a watch ERROR event (`kind: 'Status'`,
 * `code`), and what tooling built on client-node throws: its ApiException
 * (`code`, with `body` and `headers`) and the `Error` a refused client-node
 * Watch rejects with (`statusCode`, as dockerode's errors carry it too).
 */
export function apiStatusCode(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.code;
  if (!isRecord(err)) return undefined;
  if (typeof err.statusCode === 'number') return err.statusCode;
  if (err.kind === 'Status' && typeof err.code === 'number') return err.code;
  if (err instanceof Error && typeof err.code === 'number' && 'body' in err && 'headers' in err)
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
