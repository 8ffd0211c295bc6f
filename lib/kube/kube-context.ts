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
  /**
   * Reads the context's source again (its kubeconfig file, Secrets Manager
   * secret or SSM parameter): what {@link KubeContext.renewCredentials}
   * calls when the API server refuses the credentials (401).
   */
  reload?: () => Promise<KubeContext>;
  /** Monotonic milliseconds, for the spacing of reloads (tests); performance.now() by default. */
  now?: () => number;
}

/**
 * Reloads of one context are at least this far apart: a credential revoked
 * and not yet replaced in its source costs one read of the source per
 * interval, not one per refused request.
 */
export const RELOAD_MIN_INTERVAL_MS = 10_000;

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
  readonly #protocol: string;
  readonly #connections: KeptAliveConnections;
  readonly #reload: (() => Promise<KubeContext>) | undefined;
  readonly #now: () => number;
  /** The identity in use: replaced as a whole when a reload brings new credentials. */
  #identity: {
    ca: Buffer | undefined;
    token: string | undefined;
    tls: TlsIdentity;
    authenticator: KubeAuthenticator | undefined;
  };
  #generation = 0;
  #reloading: Promise<void> | undefined;
  #reloadedAt = Number.NEGATIVE_INFINITY;

  constructor(options: KubeContextOptions) {
    this.name = options.name;
    this.server = options.server.replace(/\/+$/, '');
    this.#protocol = new URL(this.server).protocol;
    this.#identity = {
      ca: options.ca,
      token: options.token || undefined,
      authenticator: options.authenticator,
      tls: {
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.cert ? { cert: options.cert } : {}),
        ...(options.key ? { key: options.key } : {}),
        ...(options.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
        ...(options.tlsServerName ? { servername: options.tlsServerName } : {}),
      },
    };
    this.#connections = new KeptAliveConnections(options.keepAlive);
    this.#reload = options.reload;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The cluster CA (PEM) when the kubeconfig names one. */
  get ca(): Buffer | undefined {
    return this.#identity.ca;
  }

  /** The user's static bearer token, if it has one. */
  get token(): string | undefined {
    return this.#identity.token;
  }

  /** How many reloads brought credentials in: read before a request, passed to renewCredentials after a 401. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * After the API server answered 401 to a request sent with credentials of
   * `generation`: whether newer credentials are there to try once more.
   * Reads the source again (its kubeconfig file, secret or parameter) unless
   * another refused request already did since that request went out; one
   * read serves every request refused together, and reads are at least
   * {@link RELOAD_MIN_INTERVAL_MS} apart. A source that cannot be read, or
   * whose kubeconfig names another server, brings nothing: the 401 stands.
   */
  async renewCredentials(generation: number): Promise<boolean> {
    if (this.#generation !== generation) return true;
    if (!this.#reload) return false;
    if (!this.#reloading) {
      if (this.#now() - this.#reloadedAt < RELOAD_MIN_INTERVAL_MS) return false;
      this.#reloadedAt = this.#now();
      this.#reloading = this.#adoptReloaded(this.#reload).finally(() => {
        this.#reloading = undefined;
      });
    }
    await this.#reloading;
    return this.#generation !== generation;
  }

  /**
   * Sends with the credentials held now and, when that answer is a 401
   * (`statusOf`) and {@link renewCredentials} brings newer ones, once more;
   * the refused answer is handed to `discard` first (a stream to close).
   * Every request path of the context sends this way: the typed clients',
   * watches, raw reads.
   */
  async sendRenewing<R>(
    send: () => Promise<R>,
    statusOf: (answer: R) => number | undefined,
    discard: (answer: R) => void = () => undefined,
  ): Promise<R> {
    const generation = this.#generation;
    const answer = await send();
    if (statusOf(answer) !== 401 || !(await this.renewCredentials(generation))) return answer;
    discard(answer);
    return send();
  }

  async #adoptReloaded(reload: () => Promise<KubeContext>): Promise<void> {
    let next: KubeContext;
    try {
      next = await reload();
    } catch {
      // Unreadable now: the request keeps its 401, and the next refused one after the interval tries again.
      return;
    }
    if (next.server !== this.server) return;
    this.#identity = next.#identity;
    this.#generation++;
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
    const { authenticator, token: bearer, tls } = this.#identity;
    const made = authenticator ? await authenticator.credentials() : undefined;
    const headers = { ...made?.headers, ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) };
    if (made?.agent) return { headers, agent: made.agent };
    const identity = made?.tls ? { ...tls, ...definedOnly(made.tls) } : tls;
    return { headers, agent: this.#connections.agent(this.#protocol, identity) };
  }
}

function definedOnly(tls: TlsIdentity): TlsIdentity {
  return Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined && v !== null));
}

/** The context of client-node's KubeConfig: its current context, checked; client-node makes every request's credentials. */
export function contextFromKubeConfig(
  kc: KubeConfig,
  keepAlive?: KeepAliveOptions,
  reload?: () => Promise<KubeContext>,
): KubeContext {
  const { context, server, ca, user } = checkCurrentContext(kc);
  return new KubeContext({
    name: context,
    server,
    ...(ca ? { ca } : {}),
    ...(typeof user.token === 'string' && user.token ? { token: user.token } : {}),
    authenticator: clientNodeAuthenticator(kc),
    ...(keepAlive ? { keepAlive } : {}),
    ...(reload ? { reload } : {}),
  });
}

/**
 * Loads a kubeconfig's current context. `{ default: true }` looks where
 * kubectl does (KUBECONFIG, ~/.kube/config, the in-cluster service account).
 * A file (or the default lookup) is read again when the API server refuses
 * the credentials ({@link KubeContext.renewCredentials}); inline YAML is read
 * again through `options.reload` when given (a secret's or a parameter's).
 * @throws KubeConfigError naming the source and what is wrong with it.
 */
export async function loadKubeContext(
  source: KubeConfigSource,
  options: { keepAlive?: KeepAliveOptions; reload?: () => Promise<KubeContext> } = {},
): Promise<KubeContext> {
  const from =
    'kubeconfigPath' in source
      ? `kubeconfig ${source.kubeconfigPath}`
      : 'kubeconfigYaml' in source
        ? 'inline kubeconfig'
        : 'default kubeconfig';
  try {
    const reload =
      options.reload ?? ('kubeconfigYaml' in source ? undefined : () => loadKubeContext(source, options));
    return contextFromKubeConfig(await kubeConfigOf(source), options.keepAlive, reload);
  } catch (err) {
    if (!(err instanceof KubeConfigError)) throw err;
    throw new KubeConfigError(`cannot load ${from}: ${err.message}`);
  }
}
