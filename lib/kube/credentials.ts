import type { Clock } from '../clock.ts';
import type { ClusterCredentialSources } from './aws-credential-sources.ts';
import { KubeConfigError, loadKubeConfig } from './client.ts';
import type { KubeAuthenticator, RequestCredentials } from './kube-authenticator.ts';
import { KubeContext } from './kube-context.ts';

/**
 * Where the functions get their access to the cluster, one of (config.ts
 * refuses more than one):
 * - a kubeconfig file (SVK_KUBECONFIG; tests and local runs);
 * - a kubeconfig held in Secrets Manager (SVK_KUBECONFIG_SECRET) or in an SSM
 *   SecureString parameter (SVK_KUBECONFIG_PARAMETER), read once per cold
 *   start and again when the API server answers 401 (credentials that
 *   rotate), never put in the environment or a log line;
 * - EKS IAM authentication (SVK_EKS_CLUSTER_NAME): a token presigned with the
 *   function's own role, the endpoint and CA from SVK_EKS_ENDPOINT and
 *   SVK_EKS_CA_DATA or else eks:DescribeCluster;
 * - nothing: kubectl's default lookup (KUBECONFIG, ~/.kube/config).
 */
export interface ClusterAccessConfig {
  kubeconfigPath?: string;
  kubeconfigSecret?: string;
  kubeconfigParameter?: string;
  eks?: { clusterName: string; endpoint?: string; caData?: string };
}

/** Whether loading `access` needs AWS calls (so cannot be done synchronously). */
export function needsAwsSources(access: ClusterAccessConfig): boolean {
  return Boolean(access.kubeconfigSecret || access.kubeconfigParameter || access.eks);
}

/** A new token is made this long before the old one expires; invocations run for at most 15 minutes. */
export const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;

/**
 * Fills in the bearer token of the EKS user on every request to the API
 * server (typed clients and watches alike), making a new one when none was
 * made yet or the current one is within TOKEN_REFRESH_MARGIN_MS of expiring
 * (its own 15 minutes, or the AWS credentials it was signed with, whichever
 * ends first).
 * A token is local signing only, so "per invocation or before it expires"
 * costs nothing; concurrent requests share one in-flight generation.
 */
export class EksTokenAuthenticator implements KubeAuthenticator {
  #current: { token: string; expiresAt: number } | undefined;
  #pending: Promise<string> | undefined;

  constructor(
    private readonly options: {
      clusterName: string;
      region: string;
      sources: Pick<ClusterCredentialSources, 'credentials'>;
      clock: Clock;
    },
  ) {}

  async credentials(): Promise<RequestCredentials> {
    return { headers: { Authorization: `Bearer ${await this.token()}` } };
  }

  /** The current token, made anew when due. */
  async token(): Promise<string> {
    const now = this.options.clock.now();
    if (this.#current && now < this.#current.expiresAt - TOKEN_REFRESH_MARGIN_MS) return this.#current.token;
    this.#pending ??= this.#generate().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #generate(): Promise<string> {
    const { clusterName, region, sources, clock } = this.options;
    const now = clock.now();
    // Loaded here, not at cold start: its signer is only for EKS IAM authentication.
    const { createEksToken } = await import('./eks-token.ts');
    const credentials = await sources.credentials();
    const { token, expiresAt } = await createEksToken({ clusterName, region, credentials, now });
    // STS refuses the presigned call once the session it was signed with has expired: the token
    // lives until the earlier of its own expiry and its credentials'.
    const sessionEnds = credentials.expiration?.getTime() ?? Number.POSITIVE_INFINITY;
    this.#current = { token, expiresAt: Math.min(expiresAt, sessionEnds) };
    return token;
  }
}

/**
 * Builds the Kubernetes context for `access`: reads the kubeconfig secret or
 * parameter, or describes the EKS cluster, once. Call once per cold start.
 * @throws KubeConfigError naming the source (never its content) when it
 * cannot be read or is not a usable kubeconfig.
 */
export async function loadClusterKubeConfig(
  access: ClusterAccessConfig,
  options: { region: string; clock: Clock; sources: ClusterCredentialSources },
): Promise<KubeContext> {
  const { sources } = options;
  if (access.eks) return eksKubeConfig(access.eks, options);
  if (access.kubeconfigSecret || access.kubeconfigParameter) {
    const from = access.kubeconfigSecret
      ? `Secrets Manager secret ${access.kubeconfigSecret}`
      : `SSM parameter ${access.kubeconfigParameter}`;
    // Read again when the API server refuses the credentials (401): a rotated token is put in the
    // secret or parameter first, then the old one revoked (docs/security.md).
    const load = async (): Promise<KubeContext> => {
      let yaml: string;
      try {
        yaml = access.kubeconfigSecret
          ? await sources.secretString(access.kubeconfigSecret)
          : await sources.parameterValue(access.kubeconfigParameter ?? '');
      } catch (err) {
        // AWS errors name the resource and the reason, never the value.
        throw new KubeConfigError(`cannot read the kubeconfig from ${from}: ${errorText(err)}`, {
          cause: err,
        });
      }
      try {
        return await loadKubeConfig({ kubeconfigYaml: yaml }, { reload: load });
      } catch {
        // The parser's message quotes the offending lines, which may hold a
        // token or a key: say where, not what.
        throw new KubeConfigError(
          `the kubeconfig in ${from} is not a usable kubeconfig (YAML with a current context naming a cluster server)`,
        );
      }
    };
    return load();
  }
  return loadKubeConfig(
    access.kubeconfigPath ? { kubeconfigPath: access.kubeconfigPath } : { default: true },
  );
}

async function eksKubeConfig(
  eks: NonNullable<ClusterAccessConfig['eks']>,
  options: { region: string; clock: Clock; sources: ClusterCredentialSources },
): Promise<KubeContext> {
  let { endpoint, caData } = eks;
  if (!endpoint || !caData) {
    try {
      const described = await options.sources.describeCluster(eks.clusterName);
      endpoint ??= described.endpoint;
      caData ??= described.caData;
    } catch (err) {
      throw new KubeConfigError(`cannot describe EKS cluster ${eks.clusterName}: ${errorText(err)}`, {
        cause: err,
      });
    }
  }
  if (!endpoint) throw new KubeConfigError(`EKS cluster ${eks.clusterName} has no endpoint`);
  return new KubeContext({
    name: eks.clusterName,
    server: endpoint,
    ...(caData ? { ca: Buffer.from(caData, 'base64') } : {}),
    authenticator: new EksTokenAuthenticator({
      clusterName: eks.clusterName,
      region: options.region,
      sources: options.sources,
      clock: options.clock,
    }),
    // A 401 (an access entry changed, a token refused early): a fresh authenticator makes a new token.
    reload: () => eksKubeConfig(eks, options),
  });
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
