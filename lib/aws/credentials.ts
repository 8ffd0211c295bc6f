/**
 * The AWS credentials our own calls sign with (lib/aws/aws-json-wire.ts).
 * In Lambda the runtime puts the function role's credentials in the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
 * which the config reads (lib/config): they are used as they are, as the
 * SDK's first provider (fromEnv) would. Anywhere else (a laptop with a
 * profile, a container with a task role) the SDK's own provider chain
 * (@aws-sdk/credential-provider-node's defaultProvider) is loaded by a
 * dynamic import() at the first call that needs it, so that a function
 * never parses it at cold start, and its credentials are kept and
 * refreshed as the SDK clients keep them.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When temporary credentials stop working; undefined for credentials that do not expire. */
  expiration?: Date;
}

/** Gives the credentials to sign the next request with. */
export type CredentialProvider = () => Promise<AwsCredentials>;

/**
 * The SDK refreshes credentials that expire within five minutes
 * (@smithy/core's memoizeIdentityProvider with the AWS SDK's
 * isIdentityExpired), so that a request signed now is not refused later.
 */
export const CREDENTIALS_REFRESH_BEFORE_MS = 5 * 60_000;

export interface CredentialOptions {
  /** Loads the provider chain used when no credentials are given; the SDK's defaultProvider by default. */
  loadChain?: () => Promise<CredentialProvider>;
  /** Epoch ms; Date.now by default. */
  now?: () => number;
}

async function loadSdkChain(): Promise<CredentialProvider> {
  const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
  return defaultProvider();
}

/**
 * The credentials `given` (from the environment), or else the SDK's provider
 * chain, loaded on first use and memoized: concurrent calls share one
 * resolution, a failed one is tried again at the next call, and credentials
 * that expire within {@link CREDENTIALS_REFRESH_BEFORE_MS} are resolved again.
 */
export function credentialProvider(
  given: AwsCredentials | undefined,
  options: CredentialOptions = {},
): CredentialProvider {
  if (given) {
    const fixed = Promise.resolve(given);
    return () => fixed;
  }
  const loadChain = options.loadChain ?? loadSdkChain;
  const now = options.now ?? Date.now;
  let chain: Promise<CredentialProvider> | undefined;
  let current: Promise<AwsCredentials> | undefined;
  let settled: AwsCredentials | undefined;
  const resolve = async (): Promise<AwsCredentials> => {
    chain ??= loadChain().catch((err: unknown) => {
      chain = undefined;
      throw err;
    });
    const provider = await chain;
    return validCredentials(await provider());
  };
  return () => {
    if (settled && !expiresSoon(settled, now())) return Promise.resolve(settled);
    current ??= resolve().then(
      (credentials) => {
        settled = credentials;
        current = undefined;
        return credentials;
      },
      (err: unknown) => {
        current = undefined;
        throw err;
      },
    );
    return current;
  };
}

function expiresSoon(credentials: AwsCredentials, now: number): boolean {
  return (
    credentials.expiration !== undefined &&
    credentials.expiration.getTime() - now < CREDENTIALS_REFRESH_BEFORE_MS
  );
}

/** A provider's answer as credentials, or an error that says what is missing (never quoting a secret). */
function validCredentials(value: unknown): AwsCredentials {
  const v = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const missing = ['accessKeyId', 'secretAccessKey'].filter((k) => typeof v[k] !== 'string' || v[k] === '');
  if (missing.length > 0) throw new Error(`the AWS credential provider gave no ${missing.join(' and ')}`);
  return {
    accessKeyId: v.accessKeyId as string,
    secretAccessKey: v.secretAccessKey as string,
    ...(typeof v.sessionToken === 'string' ? { sessionToken: v.sessionToken } : {}),
    ...(v.expiration instanceof Date ? { expiration: v.expiration } : {}),
  };
}
