import type { V1Pod, V1ServiceAccountTokenProjection } from '@kubernetes/client-node';

/**
 * Projected service account tokens as the kubelet serves them: what a
 * `serviceAccountToken` source asks for (pkg/volume/projected), and when a
 * token is due for a new one (pkg/kubelet/token/token_manager.go,
 * requiresRefresh): once it is older than 80 % of its lifetime, or older
 * than 24 hours, each moment moved earlier by a jitter of 0 to 9 whole
 * seconds drawn at every check. Pure: the time and the random draw are given.
 */

/** A token older than this is renewed whatever its lifetime (the kubelet's maxTTL). */
export const MAX_TOKEN_AGE_MS = 24 * 60 * 60 * 1000;
/** The jitter is whole seconds below this (the kubelet's maxJitter). */
const MAX_JITTER_SECONDS = 10;
/** The API server's default expirationSeconds of a serviceAccountToken projection. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** The shortest expirationSeconds the API server accepts (10 minutes). */
export const MIN_TOKEN_EXPIRATION_SECONDS = 600;
/** The longest it accepts (2^32 seconds). */
export const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;

/**
 * A projected service account token source: asked of the TokenRequest API for the pod's service account,
 * bound to the pod, written at `path` (the token itself is never part of a plan).
 */
export interface TokenSource {
  kind: 'serviceAccountToken';
  path: string;
  /** The pod's spec.serviceAccountName. */
  serviceAccount: string;
  /** The token's audience; absent: the API server's own. */
  audience?: string;
  expirationSeconds: number;
  /** 0600 when the pod has an fsGroup (the kubelet's rule); absent: the volume's defaultMode. */
  mode?: number;
}

/**
 * The source as the kubelet's projected volume plugin asks for it: the pod's
 * service account, the audience, expirationSeconds (the API server's default
 * 3600 when absent, at least 600), mode 0600 beside an fsGroup; with what is
 * wrong with its expirationSeconds (the path is the caller's to check).
 */
export function plannedToken(
  source: V1ServiceAccountTokenProjection,
  pod: V1Pod,
): { token: TokenSource; problem?: string } {
  const seconds = source.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS;
  const problem =
    !Number.isInteger(seconds) || seconds < MIN_TOKEN_EXPIRATION_SECONDS
      ? `must be a whole number of at least ${MIN_TOKEN_EXPIRATION_SECONDS} (10 minutes), not ${seconds}`
      : seconds > MAX_TOKEN_EXPIRATION_SECONDS
        ? `must be at most ${MAX_TOKEN_EXPIRATION_SECONDS} (2^32)`
        : undefined;
  return {
    token: {
      kind: 'serviceAccountToken',
      path: source.path,
      serviceAccount: pod.spec?.serviceAccountName || 'default',
      ...(source.audience ? { audience: source.audience } : {}),
      expirationSeconds: seconds,
      ...(pod.spec?.securityContext?.fsGroup !== undefined ? { mode: 0o600 } : {}),
    },
    ...(problem ? { problem } : {}),
  };
}

/** A volume's token sources. */
export function tokenSources(volume: { sources: ReadonlyArray<{ kind: string }> }): TokenSource[] {
  return volume.sources.filter((s): s is TokenSource => s.kind === 'serviceAccountToken');
}

/** Where a payload's data holds the token of the source written at `path` (under the key `token`). */
export function tokenKey(path: string): string {
  return `serviceAccountToken/${path}`;
}

/** What the refresh rule needs of a token: when it expires, and the lifetime it was asked for. */
export interface TokenLifetime {
  /** status.expirationTimestamp, epoch milliseconds. */
  expiresAt: number;
  /** spec.expirationSeconds of the TokenRequest as answered. */
  expirationSeconds: number;
}

/**
 * Whether the token needs replacing at `now` (epoch milliseconds).
 * `random` is a draw in [0, 1), as Math.random gives.
 */
export function tokenNeedsRefresh(token: TokenLifetime, now: number, random: number): boolean {
  const jitterMs = Math.floor(random * MAX_JITTER_SECONDS) * 1000;
  const issuedAt = token.expiresAt - token.expirationSeconds * 1000;
  if (now > issuedAt + MAX_TOKEN_AGE_MS - jitterMs) return true;
  // Within 20 % of the lifetime (whole seconds, as Go's integer division gives) of the expiry.
  const marginMs = Math.floor((token.expirationSeconds * 20) / 100) * 1000;
  return now > token.expiresAt - marginMs - jitterMs;
}

/**
 * The lifetime of a token read back from where it was written (a JWT's
 * `iat` and `exp` claims, which the API server sets to the request's time
 * and that time plus expirationSeconds); undefined when it is not a JWT
 * with both. A token whose expiry the API server extended (a request for
 * 3607 s, `--service-account-extend-token-expiration`) carries the time
 * asked for as `kubernetes.io.warnafter`, which the TokenRequest answer's
 * expirationTimestamp gave too: that is its expiry here. The signature is
 * not checked: the token is only being dated.
 */
export function jwtLifetime(token: string): TokenLifetime | undefined {
  const payload = token.trim().split('.')[1];
  if (!payload) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { iat, exp } = claims as { iat?: unknown; exp?: unknown };
  const kubernetes = (claims as { 'kubernetes.io'?: { warnafter?: unknown } })['kubernetes.io'];
  const warnafter = typeof kubernetes === 'object' && kubernetes !== null ? kubernetes.warnafter : undefined;
  const expiry = typeof warnafter === 'number' ? warnafter : exp;
  if (typeof iat !== 'number' || typeof expiry !== 'number' || expiry <= iat) return undefined;
  return { expiresAt: expiry * 1000, expirationSeconds: expiry - iat };
}

/** What a projected token source asks the TokenRequest API for. */
export interface TokenRequestSpec {
  /** Absent: the API server's own audiences. */
  audience?: string;
  expirationSeconds: number;
  /** The pod the token is bound to. */
  pod: { name: string; uid: string };
}

/** A token as the TokenRequest API answered it. */
export interface IssuedToken extends TokenLifetime {
  token: Buffer;
}

/** Asks the TokenRequest API for a token of `serviceAccount`; rejects when it cannot be had. */
export type TokenRequester = (
  namespace: string,
  serviceAccount: string,
  request: TokenRequestSpec,
) => Promise<IssuedToken>;
