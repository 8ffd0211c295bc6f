import type { Agent as HttpAgent } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { clientNodeAuthenticator } from './client-node-credentials.ts';
import { type KeepAliveOptions, KeptAliveConnections, type TlsIdentity } from './keep-alive.ts';
import type { KubeAuthenticator } from './kube-authenticator.ts';
import { checkCurrentContext, KubeConfigError, type KubeConfigSource, kubeConfigOf } from './kubeconfig.ts';

/** A context built in code rather than read from a kubeconfig (EKS, tests). */
export interface KubeContextOptions {
  /** For messages: the kubeconfig context's name, or what the context stands for. */
  name: string;
  server: string;
  ca?: Buffer;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  token?: string;
  cert?: Buffer;
  key?: Buffer;
  authenticator?: KubeAuthenticator;
  keepAlive?: KeepAliveOptions;
}

/**
 * One API server and the identity to use on it: the current context of a
 * kubeconfig, or one built in code. It owns the kept-alive connections
 * (keep-alive.ts), so every client and watch on the same context shares
 * them. Cheap to keep, built once per cold start.
 */
export class KubeContext {
  readonly name: string;
  /** The API server's URL, without a trailing slash. */
  readonly server: string;
  /** The cluster CA (PEM) when the kubeconfig names one. */
  readonly ca: Buffer | undefined;
  /** The user's static bearer token, if it has one. */
  readonly token: string | undefined;
  readonly #protocol: string;
  readonly #tls: TlsIdentity;
  readonly #authenticator: KubeAuthenticator | undefined;
  readonly #connections: KeptAliveConnections;

  constructor(options: KubeContextOptions) {
    this.name = options.name;
    this.server = options.server.replace(/\/+$/, '');
    this.#protocol = new URL(this.server).protocol;
    this.ca = options.ca;
    this.token = options.token || undefined;
    this.#authenticator = options.authenticator;
    this.#tls = {
      ...(options.ca ? { ca: options.ca } : {}),
      ...(options.cert ? { cert: options.cert } : {}),
      ...(options.key ? { key: options.key } : {}),
      ...(options.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
      ...(options.tlsServerName ? { servername: options.tlsServerName } : {}),
    };
    this.#connections = new KeptAliveConnections(options.keepAlive);
  }

  /** The URL of an API path (which may hold its query already) with `query` added. */
  url(path: string, query?: Record<string, unknown>): URL {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    return url;
  }

  /** The headers and the agent of one request, credentials refreshed when due. */
  async connect(): Promise<{ headers: Record<string, string>; agent: HttpAgent }> {
    const made = this.#authenticator ? await this.#authenticator.credentials() : undefined;
    const bearer = this.token;
    const headers = { ...made?.headers, ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) };
    if (made?.agent) return { headers, agent: made.agent };
    const identity = made?.tls ? { ...this.#tls, ...definedOnly(made.tls) } : this.#tls;
    return { headers, agent: this.#connections.agent(this.#protocol, identity) };
  }
}

function definedOnly(tls: TlsIdentity): TlsIdentity {
  return Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined && v !== null));
}

/** The context of client-node's KubeConfig: its current context, checked; client-node makes every request's credentials. */
export function contextFromKubeConfig(kc: KubeConfig, keepAlive?: KeepAliveOptions): KubeContext {
  const { context, server, ca, user } = checkCurrentContext(kc);
  return new KubeContext({
    name: context,
    server,
    ...(ca ? { ca } : {}),
    ...(typeof user.token === 'string' && user.token ? { token: user.token } : {}),
    authenticator: clientNodeAuthenticator(kc),
    ...(keepAlive ? { keepAlive } : {}),
  });
}

/**
 * Loads a kubeconfig's current context. `{ default: true }` looks where
 * kubectl does (KUBECONFIG, ~/.kube/config, the in-cluster service account).
 * @throws KubeConfigError naming the source and what is wrong with it.
 */
export async function loadKubeContext(
  source: KubeConfigSource,
  options: { keepAlive?: KeepAliveOptions } = {},
): Promise<KubeContext> {
  const from =
    'kubeconfigPath' in source
      ? `kubeconfig ${source.kubeconfigPath}`
      : 'kubeconfigYaml' in source
        ? 'inline kubeconfig'
        : 'default kubeconfig';
  try {
    return contextFromKubeConfig(await kubeConfigOf(source), options.keepAlive);
  } catch (err) {
    if (!(err instanceof KubeConfigError)) throw err;
    throw new KubeConfigError(`cannot load ${from}: ${err.message}`);
  }
}
