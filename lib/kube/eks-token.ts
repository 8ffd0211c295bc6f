import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * EKS IAM authentication without the aws CLI or aws-iam-authenticator: the
 * bearer token is `k8s-aws-v1.` followed by the unpadded base64url encoding
 * of a presigned STS GetCallerIdentity URL whose signature covers the header
 * `x-k8s-aws-id: <cluster name>`. The API server's authenticator replays the
 * URL against STS (with that header) to learn the caller's IAM identity, then
 * maps it with an EKS access entry. Only local signing: no network call.
 */

export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** What `aws eks get-token` and aws-iam-authenticator use. */
export const PRESIGN_EXPIRES_SECONDS = 60;
/**
 * The authenticator accepts a token for 15 minutes after its X-Amz-Date,
 * whatever X-Amz-Expires says; we regenerate well before that.
 */
export const TOKEN_VALIDITY_MS = 15 * 60_000;

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When temporary credentials (a role's session) stop being valid; a token signed with them too. */
  expiration?: Date;
}

export interface EksTokenRequest {
  clusterName: string;
  /** Region of the STS endpoint signed for (the regional endpoint `sts.<region>.amazonaws.com`). */
  region: string;
  credentials: AwsCredentials;
  /** Signing time, epoch ms. */
  now: number;
}

export interface EksToken {
  token: string;
  /** The presigned URL inside the token. */
  url: string;
  /** Epoch ms after which the API server rejects the token. */
  expiresAt: number;
}

/** AWS's query encoding (RFC 3986 unreserved characters kept), as the signer canonicalises it. */
function awsEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** The host of the STS endpoint the token is signed for. */
export function stsHost(region: string): string {
  return `sts.${region}.${region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com'}`;
}

/**
 * Builds a token for `clusterName` from fixed inputs (a pure function of its
 * arguments, so a test can pin the exact URL).
 */
export async function createEksToken(request: EksTokenRequest): Promise<EksToken> {
  const host = stsHost(request.region);
  const signer = new SignatureV4({
    credentials: request.credentials,
    region: request.region,
    service: 'sts',
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: true,
  });
  const signed = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname: host,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host, 'x-k8s-aws-id': request.clusterName },
    },
    { expiresIn: PRESIGN_EXPIRES_SECONDS, signingDate: new Date(request.now) },
  );
  const query = Object.entries(signed.query ?? {})
    .flatMap(([key, value]) =>
      value === null ? [] : (Array.isArray(value) ? value : [value]).map((v) => [key, v] as const),
    )
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${awsEncode(key)}=${awsEncode(value)}`)
    .join('&');
  const url = `https://${host}/?${query}`;
  return {
    token: EKS_TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url'),
    url,
    expiresAt: request.now + TOKEN_VALIDITY_MS,
  };
}
