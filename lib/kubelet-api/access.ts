import type { X509Certificate } from 'node:crypto';
import type { ClusterReviews, Identity, NodeAccess } from './cluster-reviews.ts';
import type { KubeletApiRequest } from './kubelet-api-request.ts';
import { isCertificateRejected, verifyClientCertificate } from './x509-identity.ts';

/**
 * Authentication and authorization as a kubelet does them with
 * `--client-ca-file`, `authentication.webhook` and `authorization.mode:
 * Webhook` (kubelet's server/auth.go), with anonymous access off.
 */

export type Authentication = { identity: Identity } | { rejected: string };

/**
 * A verified client certificate names the user (CommonName) and groups
 * (Organization); without one, a bearer token is reviewed by the API server.
 * The front already verified the certificate during the handshake; it is
 * verified again here against the client CA, so a front whose truststore is
 * wider than the cluster's CA lets no one else in.
 */
export async function authenticate(
  request: KubeletApiRequest,
  clientCas: readonly X509Certificate[],
  reviews: ClusterReviews,
  now: number,
): Promise<Authentication> {
  if (request.clientCertPem) {
    try {
      return { identity: verifyClientCertificate(request.clientCertPem, clientCas, now) };
    } catch (err) {
      if (isCertificateRejected(err)) return { rejected: err.message };
      throw err;
    }
  }
  if (request.bearerToken) {
    const identity = await reviews.reviewToken(request.bearerToken);
    return identity ? { identity } : { rejected: 'the bearer token was not authenticated by the API server' };
  }
  return { rejected: 'no client certificate and no bearer token: anonymous requests are refused' };
}

const VERBS: Readonly<Record<string, string>> = {
  POST: 'create',
  GET: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** `path` is `prefix` or below it (the kubelet's isSubpath). */
function isSubpath(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * The kubelet's mapping of a request to the `nodes` resource: `/stats/*` is
 * nodes/stats, `/metrics/*` nodes/metrics, `/logs/*` nodes/log, `/spec/*`
 * nodes/spec, everything else (`/containerLogs`, `/pods`, `/healthz`, exec)
 * nodes/proxy. An HTTP method without a verb (HEAD, OPTIONS) gets the empty
 * verb, which no RBAC rule grants.
 */
export function nodeAccess(method: string, path: string, node: string): NodeAccess {
  const verb = VERBS[method] ?? '';
  const subresource = isSubpath(path, '/stats')
    ? 'stats'
    : isSubpath(path, '/metrics')
      ? 'metrics'
      : isSubpath(path, '/logs')
        ? 'log'
        : isSubpath(path, '/spec')
          ? 'spec'
          : 'proxy';
  return { verb, subresource, node };
}

/** The kubelet's refusal text: `Forbidden (user=…, verb=…, resource=nodes, subresource=…)`. */
export function forbiddenMessage(identity: Identity, access: NodeAccess): string {
  return `Forbidden (user=${identity.user}, verb=${access.verb}, resource=nodes, subresource=${access.subresource})`;
}
