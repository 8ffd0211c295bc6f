import type { Agent as HttpAgent } from 'node:http';
import type { TlsIdentity } from './keep-alive.ts';

/** What one request carries besides its own headers: credentials, and how to connect. */
export interface RequestCredentials {
  headers: Record<string, string>;
  /** TLS material beyond the context's own (a client certificate an exec plugin returned). */
  tls?: TlsIdentity;
  /** An agent to use as it is (a proxy's); otherwise the context's kept-alive one. */
  agent?: HttpAgent;
}

/** Credentials made per request: the EKS token, or client-node's KubeConfig (client-node-credentials.ts). */
export interface KubeAuthenticator {
  credentials(): Promise<RequestCredentials>;
}
