import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Duplex } from 'node:stream';

/**
 * Kept-alive connections to the API server.
 *
 * Without them every request opens a new TCP connection and does a full TLS
 * handshake: a round trip and the server's private-key operation each time
 * (`@kubernetes/client-node` 1.x builds a new agent for every request). A
 * request goes through one kept-alive agent for as long as the TLS identity
 * (CA, client certificate and key, server name) is the same, so that
 * connections are reused; the headers stay per request (a token may be
 * refreshed).
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

/** The TLS options that decide which identity a connection has. */
export interface TlsIdentity {
  ca?: Buffer | string | Array<Buffer | string>;
  cert?: Buffer | string | Array<Buffer | string>;
  key?: Buffer | string | Array<Buffer | string>;
  pfx?: Buffer | string;
  passphrase?: string;
  servername?: string;
  rejectUnauthorized?: boolean;
}

const IDENTITY_OPTIONS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'servername',
  'rejectUnauthorized',
] as const satisfies ReadonlyArray<keyof TlsIdentity>;

function sameOption(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => sameOption(x, b[i]));
  return a === b;
}

export function sameIdentity(a: TlsIdentity, b: TlsIdentity): boolean {
  return IDENTITY_OPTIONS.every((name) => sameOption(a[name], b[name]));
}

export interface KeepAliveOptions {
  /** Default {@link MAX_IDLE_MS}. */
  maxIdleMs?: number;
  /** Monotonic milliseconds (tests move it); default performance.now. */
  now?: () => number;
}

/**
 * The kept-alive agent of one API server: one at a time, replaced when the
 * TLS identity changes (a rotated client certificate: the old agent's
 * connections close when idle), its stale free connections closed before
 * every request.
 */
export class KeptAliveConnections {
  readonly #maxIdleMs: number;
  readonly #now: () => number;
  #current: { agent: HttpAgent; identity: TlsIdentity; idleSince: WeakMap<Duplex, number> } | undefined;

  constructor(options: KeepAliveOptions = {}) {
    this.#maxIdleMs = options.maxIdleMs ?? MAX_IDLE_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The agent for `identity` (ignored for plain http), with the connections idle for too long closed. */
  agent(protocol: string, identity: TlsIdentity): HttpAgent {
    let current = this.#current;
    if (!current || !sameIdentity(current.identity, identity)) {
      current = this.#create(protocol, identity);
      this.#current = current;
    }
    this.#closeStale(current.agent, current.idleSince);
    return current.agent;
  }

  #create(protocol: string, identity: TlsIdentity) {
    // `timeout` also closes a connection left idle while nothing else uses the agent.
    const options = { keepAlive: true, timeout: this.#maxIdleMs };
    const agent = protocol === 'http:' ? new HttpAgent(options) : new HttpsAgent({ ...identity, ...options });
    const idleSince = new WeakMap<Duplex, number>();
    // After the agent's own listener, which put the socket back in the pool.
    agent.on('free', (socket: Duplex) => idleSince.set(socket, this.#now()));
    return { agent, identity: { ...identity }, idleSince };
  }

  #closeStale(agent: HttpAgent, idleSince: WeakMap<Duplex, number>): void {
    const now = this.#now();
    for (const sockets of Object.values(agent.freeSockets)) {
      if (!sockets) continue;
      for (let i = sockets.length - 1; i >= 0; i--) {
        const socket = sockets[i];
        if (!socket) continue;
        const since = idleSince.get(socket) ?? Number.NEGATIVE_INFINITY;
        if (socket.destroyed || now - since > this.#maxIdleMs) {
          sockets.splice(i, 1);
          socket.destroy();
        }
      }
    }
  }
}
