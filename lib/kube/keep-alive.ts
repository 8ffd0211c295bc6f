import type { Agent as HttpAgent } from 'node:http';
import { Agent, type AgentOptions } from 'node:https';
import type { Duplex } from 'node:stream';
import type { KubeConfig, RequestContext, SecurityAuthentication } from '@kubernetes/client-node';

/**
 * Kept-alive connections for the typed Kubernetes clients.
 *
 * `@kubernetes/client-node` 1.x builds a new `https.Agent` for every request
 * (KubeConfig.applySecurityAuthentication), so every request opens a new TCP
 * connection and does a full TLS handshake: a round trip and the server's
 * private-key operation each time. This wraps the kubeconfig's
 * authentication: the headers it sets stay per request (a token may be
 * refreshed), but the request goes through one kept-alive agent for as long
 * as the TLS identity (CA, client certificate and key, server name) is the
 * same, so that connections are reused.
 *
 * A connection idle for longer than {@link MAX_IDLE_MS} is closed before it
 * could be reused: a Lambda sandbox may be frozen for minutes between two
 * invocations, and a load balancer in front of the API server (an EKS
 * endpoint's, 350 s) drops idle connections silently, so a request on such a
 * connection would fail with a reset. Nothing is ever sent on a connection
 * older than that; within it, a burst of requests shares a few connections.
 */

/** Longest idle time after which a connection is not reused (well under load balancers' idle timeouts). */
export const MAX_IDLE_MS = 30_000;

/** The agent options that decide which TLS identity a connection has. */
const IDENTITY_OPTIONS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'servername',
  'rejectUnauthorized',
] as const;

function sameOption(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => sameOption(x, b[i]));
  return a === b;
}

export function sameIdentity(a: AgentOptions, b: AgentOptions): boolean {
  return IDENTITY_OPTIONS.every((name) => sameOption(a[name], b[name]));
}

export interface KeepAliveOptions {
  /** Default {@link MAX_IDLE_MS}. */
  maxIdleMs?: number;
  /** Monotonic milliseconds (tests move it); default performance.now. */
  now?: () => number;
}

/** An https.Agent that keeps connections alive and never reuses one idle for longer than `maxIdleMs`. */
export class KeepAliveAgent extends Agent {
  readonly #idleSince = new WeakMap<Duplex, number>();
  readonly #maxIdleMs: number;
  readonly #now: () => number;

  constructor(
    readonly identity: AgentOptions,
    options: KeepAliveOptions = {},
  ) {
    const maxIdleMs = options.maxIdleMs ?? MAX_IDLE_MS;
    // `timeout` also closes a connection left idle while nothing else uses the agent.
    super({ ...identity, keepAlive: true, timeout: maxIdleMs });
    this.#maxIdleMs = maxIdleMs;
    this.#now = options.now ?? (() => performance.now());
    // After the agent's own listener, which put the socket back in the pool.
    this.on('free', (socket: Duplex) => this.#idleSince.set(socket, this.#now()));
  }

  /** Closes the free connections idle for longer than the limit; called before every request. */
  closeStale(): void {
    const now = this.#now();
    for (const sockets of Object.values(this.freeSockets)) {
      if (!sockets) continue;
      for (let i = sockets.length - 1; i >= 0; i--) {
        const socket = sockets[i];
        if (!socket) continue;
        const since = this.#idleSince.get(socket) ?? Number.NEGATIVE_INFINITY;
        if (socket.destroyed || now - since > this.#maxIdleMs) {
          sockets.splice(i, 1);
          socket.destroy();
        }
      }
    }
  }
}

function isHttpsAgent(agent: HttpAgent | Agent | undefined): agent is Agent {
  return agent instanceof Agent;
}

/**
 * The kubeconfig's authentication, with the per-request agent replaced by a
 * kept-alive one for the same TLS identity. Agents that are not plain
 * `https.Agent`s (a proxy's) are left as they are.
 */
export function keepAliveAuthentication(
  kc: KubeConfig,
  options: KeepAliveOptions = {},
): SecurityAuthentication {
  let current: KeepAliveAgent | undefined;
  return {
    getName: () => 'default',
    async applySecurityAuthentication(context: RequestContext) {
      await kc.applySecurityAuthentication(context);
      const fresh = context.getAgent();
      if (!isHttpsAgent(fresh) || fresh instanceof KeepAliveAgent) return;
      if (!current || !sameIdentity(current.identity, fresh.options)) {
        // A new identity (rotated client certificate): the old agent's connections close when idle.
        current = new KeepAliveAgent({ ...fresh.options }, options);
      }
      current.closeStale();
      context.setAgent(current);
    },
  };
}
