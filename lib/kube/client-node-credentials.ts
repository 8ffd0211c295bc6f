import type { RequestOptions } from 'node:https';
import type { KubeAuthenticator, RequestCredentials } from './kube-authenticator.ts';
import type { KubeconfigDocument } from './kubeconfig.ts';

/**
 * The credentials of a kubeconfig user our loader does not handle itself
 * (kubeconfig.ts: an `exec` plugin, an `auth-provider`, basic auth,
 * impersonation, a `proxy-url`), made by `@kubernetes/client-node`'s
 * KubeConfig, which is imported on the first request that needs it: a
 * function whose kubeconfig needs none of it never parses client-node.
 *
 * In AWS an exec plugin's command (`aws`, `gke-gcloud-auth-plugin`) is not in
 * the Lambda runtime: deployed functions use EKS IAM authentication
 * (SVK_EKS_CLUSTER_NAME) or a kubeconfig with a token or a client
 * certificate; this is for `npm start` with a cloud cluster's kubeconfig.
 */
export function clientNodeAuthenticator(
  document: KubeconfigDocument,
  context: string,
  delegated: readonly string[],
): KubeAuthenticator {
  type ClientNodeConfig = import('./client-node-kubeconfig.ts').KubeConfig;
  let loading: Promise<ClientNodeConfig> | undefined;
  const load = async () => {
    const { KubeConfig } = await import('./client-node-kubeconfig.ts');
    const kc = new KubeConfig();
    // JSON is YAML; the document's paths are absolute already.
    kc.loadFromString(JSON.stringify(document));
    kc.setCurrentContext(context);
    return kc;
  };
  const viaProxy = delegated.includes('proxy-url');
  return {
    async credentials(): Promise<RequestCredentials> {
      loading ??= load();
      const kc = await loading;
      const opts: RequestOptions = {};
      // Headers (the exec plugin's or auth provider's token, impersonation), TLS material, and an agent.
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(opts.headers ?? {})) {
        if (value !== undefined) headers[key] = String(value);
      }
      if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      const tls = {
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        pfx: opts.pfx,
        passphrase: opts.passphrase,
        servername: opts.servername,
        rejectUnauthorized: opts.rejectUnauthorized,
      } as RequestCredentials['tls'];
      // A proxy's agent is client-node's own, one per request as client-node uses it.
      const agent = viaProxy && typeof opts.agent === 'object' ? opts.agent : undefined;
      return { headers, ...(tls ? { tls } : {}), ...(agent ? { agent } : {}) };
    },
  };
}
