import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeAuthenticator, RequestCredentials } from './kube-authenticator.ts';

/**
 * The credentials of a kubeconfig's current context, made per request by
 * client-node's KubeConfig (`applyToHTTPSOptions`): the bearer token (static,
 * a token file read again after a minute, an exec plugin's, an auth
 * provider's such as OIDC), basic auth, impersonation headers, the TLS
 * material and server name, and a `proxy-url`'s agent. The request itself
 * goes over our kept-alive connections (kube-http.ts), except through a
 * proxy, whose agent is client-node's.
 *
 * In AWS an exec plugin's command (`aws`, `gke-gcloud-auth-plugin`) is not in
 * the Lambda runtime: deployed functions use EKS IAM authentication
 * (SVK_EKS_CLUSTER_NAME) or a kubeconfig with a token or a client
 * certificate; exec plugins are for `npm start` with a cloud cluster's kubeconfig.
 */
export function clientNodeAuthenticator(kc: KubeConfig): KubeAuthenticator {
  const viaProxy = Boolean(kc.getCurrentCluster()?.proxyUrl);
  return {
    async credentials(): Promise<RequestCredentials> {
      const opts: RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(opts.headers ?? {})) {
        // A token file's content ends with a line break; a header cannot hold it.
        if (value !== undefined) headers[key] = String(value).trim();
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
      const agent = viaProxy && typeof opts.agent === 'object' ? opts.agent : undefined;
      return { headers, ...(tls ? { tls } : {}), ...(agent ? { agent } : {}) };
    },
  };
}
