import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { AuthenticationApi, AuthorizationApi } from '../kube/group-apis.ts';
import { TtlCache } from './ttl-cache.ts';

/** Who a request comes from, as the API server's authenticators and authorizers see users. */
export interface Identity {
  user: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

/** What a request to a node's kubelet API asks, as an authorization check of the `nodes` resource. */
export interface NodeAccess {
  /** get, create, update, patch, delete (from the HTTP method). */
  verb: string;
  /** proxy, stats, metrics, log or spec (from the path). */
  subresource: string;
  /** The node asked. */
  node: string;
}

/**
 * The API server's verdicts a kubelet in webhook mode asks for: TokenReview
 * for bearer tokens and SubjectAccessReview for every request.
 */
export interface ClusterReviews {
  /** The identity a bearer token belongs to, or undefined when the API server does not authenticate it. */
  reviewToken(token: string): Promise<Identity | undefined>;
  /** Whether `identity` may do `access`, and the authorizer's reason. */
  reviewAccess(identity: Identity, access: NodeAccess): Promise<{ allowed: boolean; reason: string }>;
}

/**
 * How long verdicts are reused in a warm sandbox: the kubelet's defaults
 * (`--authentication-token-webhook-cache-ttl` 2 min; authorization webhook
 * cache 5 min allowed, 30 s denied), so a metrics scrape every 15 s costs no
 * review at all. A failed token is not reused.
 */
export const REVIEW_CACHE_TTL_MS = { token: 120_000, allowed: 300_000, denied: 30_000 } as const;

/** Reviews through the API server's authentication.k8s.io and authorization.k8s.io APIs, cached. */
export function kubeClusterReviews(
  apis: { authentication: AuthenticationApi; authorization: AuthorizationApi },
  clock: Clock,
): ClusterReviews {
  const tokens = new TtlCache<Identity>(clock);
  const verdicts = new TtlCache<{ allowed: boolean; reason: string }>(clock);
  return {
    async reviewToken(token) {
      const key = createHash('sha256').update(token).digest('hex');
      const cached = tokens.get(key);
      if (cached) return cached;
      const review = await apis.authentication.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      });
      const user = review.status?.user;
      if (!review.status?.authenticated || !user?.username) return undefined;
      const identity: Identity = {
        user: user.username,
        groups: user.groups ?? [],
        ...(user.uid ? { uid: user.uid } : {}),
        ...(user.extra ? { extra: user.extra } : {}),
      };
      tokens.set(key, identity, REVIEW_CACHE_TTL_MS.token);
      return identity;
    },
    async reviewAccess(identity, access) {
      const key = JSON.stringify([identity, access]);
      const cached = verdicts.get(key);
      if (cached) return cached;
      const review = await apis.authorization.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: identity.user,
            groups: identity.groups,
            ...(identity.uid ? { uid: identity.uid } : {}),
            ...(identity.extra ? { extra: identity.extra } : {}),
            resourceAttributes: {
              verb: access.verb,
              group: '',
              version: 'v1',
              resource: 'nodes',
              subresource: access.subresource,
              name: access.node,
            },
          },
        },
      });
      const verdict = { allowed: review.status?.allowed === true, reason: review.status?.reason ?? '' };
      verdicts.set(key, verdict, verdict.allowed ? REVIEW_CACHE_TTL_MS.allowed : REVIEW_CACHE_TTL_MS.denied);
      return verdict;
    },
  };
}
