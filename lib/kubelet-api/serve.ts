import type { X509Certificate } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { KubeletApiSource } from '../config/kubelet-api-config.ts';
import { isNotFound, type KubeClients } from '../kube/client.ts';
import { rawGet } from '../kube/raw-get.ts';
import type { Logger } from '../log/logger.ts';
import type { PodProvider, PodUsage } from '../provider/provider.ts';
import { authenticate, forbiddenMessage, nodeAccess } from './access.ts';
import type { ClusterReviews } from './cluster-reviews.ts';
import { containerLogs } from './container-logs.ts';
import type { KubeletApiRequest } from './kubelet-api-request.ts';
import { PROMETHEUS_TEXT, resourceMetrics } from './metrics-resource.ts';
import { type KubeletApiEndpoint, nodeForHost } from './node-endpoint.ts';
import { jsonResponse, type KubeletApiResponse, statusResponse, textResponse } from './responses.ts';
import { statsSummary } from './stats-summary.ts';
import type { TtlCache } from './ttl-cache.ts';

/** What the kubelet API needs, built once per cold start. */
export interface KubeletApiDependencies {
  /** The nodes of this deployment: only they are served. */
  nodes: readonly string[];
  /** The API and stage whose events are served: any other event is refused before anything else is read. */
  source: KubeletApiSource;
  endpoint: KubeletApiEndpoint;
  /** The CAs client certificates must chain to (the cluster CA unless configured). */
  clientCas: readonly X509Certificate[];
  reviews: ClusterReviews;
  kube: KubeClients;
  podProvider: PodProvider;
  clock: Clock;
  log: Logger;
  /** The longest a `follow` streams before the answer ends. */
  followMaxMs: number;
  requestTimeoutMs: number;
  /** Each node's registration time, read from the API server at most every few minutes. */
  startTimes: TtlCache<Date>;
}

/** Streaming upgrades the API server proxies to a kubelet; none can cross a request/response front. */
const STREAMING = ['/exec', '/attach', '/portForward', '/run'];

/**
 * Serves one request for one of our nodes, as a kubelet's read API does:
 * authenticate (client certificate or bearer token; never anonymous), find
 * the node from the Host, authorize with a SubjectAccessReview, then answer.
 */
export async function serveKubeletApi(
  request: KubeletApiRequest,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<KubeletApiResponse> {
  const admission = await admitKubeletApiRequest(request, deps);
  if ('refused' in admission) return admission.refused;
  const { node, context } = admission;
  const response = await route(request, node, deps, signal);
  deps.log.info({ ...context, status: response.statusCode }, 'kubelet API request');
  return response;
}

/** A request that passed authentication and authorization, or the answer that refuses it. */
export type KubeletApiAdmission =
  | { node: string; context: { user: string; node: string; method: string; path: string } }
  | { refused: KubeletApiResponse };

/**
 * What every request goes through first, streaming upgrades included: the
 * event's origin (our own API and stage), authentication (client
 * certificate or bearer token; never anonymous), the node from the Host, and
 * a SubjectAccessReview of the kubelet's mapping.
 */
export async function admitKubeletApiRequest(
  request: KubeletApiRequest,
  deps: KubeletApiDependencies,
): Promise<KubeletApiAdmission> {
  const foreign = checkSource(request, deps.source);
  if (foreign) {
    deps.log.warn({ path: request.path, reason: foreign }, 'kubelet API: event from another source refused');
    return { refused: textResponse(403, 'Forbidden: this request did not come through the kubelet API') };
  }
  const authn = await authenticate(request, deps.clientCas, deps.reviews, deps.clock.now());
  if ('rejected' in authn) {
    deps.log.info(
      { path: request.path, host: request.host, reason: authn.rejected },
      'kubelet API: unauthorized',
    );
    return { refused: textResponse(401, 'Unauthorized') };
  }
  const { identity } = authn;
  const node = nodeForHost(request.host, deps.nodes, deps.endpoint, request.port);
  if (!node) {
    const at = request.port ? `${request.host}:${request.port}` : request.host;
    return { refused: textResponse(404, `no node of this deployment answers at ${at}`) };
  }
  const access = nodeAccess(request.method, request.path, node);
  const verdict = await deps.reviews.reviewAccess(identity, access);
  const context = { user: identity.user, node, method: request.method, path: request.path };
  if (!verdict.allowed) {
    deps.log.info({ ...context, reason: verdict.reason }, 'kubelet API: forbidden');
    return { refused: textResponse(403, forbiddenMessage(identity, access)) };
  }
  return { node, context };
}

/**
 * Why the event did not come from our front, or undefined when it did. The
 * client certificate in an event is only as good as the front that verified
 * it: API Gateway's mutual TLS on our custom domain, mapped to our API's
 * stage. Another API (or another stage of ours, reached some other way)
 * allowed to invoke the function hands it whatever certificate its own front
 * took, or none checked at all, so an event that does not name our API and
 * stage is refused before its certificate is read. What this cannot tell: a
 * caller invoking the function directly can name our API too; the resource
 * policy and IAM keep that to the deployers (docs/kubelet-api.md, "Whom it
 * trusts").
 */
export function checkSource(request: KubeletApiRequest, source: KubeletApiSource): string | undefined {
  const clip = (text: string | undefined) => JSON.stringify((text ?? '').slice(0, 64));
  if (request.apiId !== source.apiId) {
    return `requestContext.apiId ${clip(request.apiId)} is not the kubelet API's ${clip(source.apiId)}`;
  }
  if (request.stage !== source.stage) {
    return `requestContext.stage ${clip(request.stage)} is not the kubelet API's ${clip(source.stage)}`;
  }
  return undefined;
}

async function route(
  request: KubeletApiRequest,
  node: string,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<KubeletApiResponse> {
  const { path } = request;
  const segments = path.split('/').filter((s) => s.length > 0);
  const [first = '', ...rest] = segments;
  if (STREAMING.includes(`/${first}`)) {
    return statusResponse(
      501,
      'NotImplemented',
      `${first} is not supported on serverless-virtual-kubelet node ${node}: its kubelet API is a request/response function behind API Gateway, which cannot carry the upgraded (SPDY or WebSocket) connection ${first} needs`,
    );
  }
  const reads: Record<string, () => Promise<KubeletApiResponse>> = {
    '/healthz': async () => textResponse(200, 'ok'),
    '/pods': () => nodePods(node, deps),
    '/stats/summary': () => summary(node, deps, signal),
    '/metrics/resource': () => metrics(node, deps, signal),
  };
  const normalized = path.length > 1 ? path.replace(/\/+$/, '') : path;
  const read = reads[normalized];
  const logs = first === 'containerLogs';
  if (!read && !logs) {
    deps.log.info({ path, node }, 'kubelet API: no such path');
    return textResponse(404, '404 page not found');
  }
  if (request.method !== 'GET') return textResponse(405, `${request.method} is not allowed on ${path}`);
  if (read) return read();
  return containerLogs(rest, request.query, {
    core: deps.kube.core,
    podProvider: deps.podProvider,
    node,
    now: deps.clock.now(),
    followMaxMs: deps.followMaxMs,
    signal,
  });
}

/** The API server's PodList of the pods bound to `node`, passed on as it wrote it. */
async function nodePods(node: string, deps: KubeletApiDependencies): Promise<KubeletApiResponse> {
  const selector = encodeURIComponent(`spec.nodeName=${node}`);
  const answer = await rawGet(
    deps.kube.context,
    `/api/v1/pods?fieldSelector=${selector}`,
    deps.requestTimeoutMs,
  );
  if (answer.status !== 200) {
    throw new Error(`listing the pods of node ${node}: API server answered ${answer.status}: ${answer.body}`);
  }
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: answer.body.toString('utf8'),
  };
}

async function usage(
  node: string,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<PodUsage[] | undefined> {
  return deps.podProvider.podStats ? deps.podProvider.podStats(node, signal) : undefined;
}

async function summary(
  node: string,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<KubeletApiResponse> {
  const [started, pods] = await Promise.all([nodeStartTime(node, deps), usage(node, deps, signal)]);
  return jsonResponse(200, statsSummary(node, started, pods, deps.clock.now()));
}

async function metrics(
  node: string,
  deps: KubeletApiDependencies,
  signal: AbortSignal,
): Promise<KubeletApiResponse> {
  const pods = await usage(node, deps, signal);
  return {
    statusCode: 200,
    headers: { 'content-type': PROMETHEUS_TEXT },
    body: resourceMetrics(pods, deps.clock.now()),
  };
}

/**
 * When the node was registered: the start time of a virtual node's
 * "machine" (now, while it is not registered yet). Read once per
 * {@link START_TIME_CACHE_MS} per node, not on every metrics scrape.
 */
async function nodeStartTime(node: string, deps: KubeletApiDependencies): Promise<Date> {
  const cached = deps.startTimes.get(node);
  if (cached) return cached;
  try {
    const created = (await deps.kube.core.readNode({ name: node })).metadata?.creationTimestamp;
    if (created) {
      deps.startTimes.set(node, new Date(created), START_TIME_CACHE_MS);
      return new Date(created);
    }
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return new Date(deps.clock.now());
}

const START_TIME_CACHE_MS = 10 * 60_000;
