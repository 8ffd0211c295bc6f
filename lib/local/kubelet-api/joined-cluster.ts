/**
 * The local kubelet API for a cluster `npm start` joined rather than
 * started: on an address its API server can reach (address-choice.ts), with
 * the client CA that signs the API server's kubelet client certificate, and a
 * serving certificate from the cluster's `kubernetes.io/kubelet-serving`
 * signer (serving-certificate.ts), else one of a CA of our own, which an API
 * server that does not verify kubelets (kubeadm's, kind's and minikube's
 * default: no `--kubelet-certificate-authority`) accepts.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../config/config.ts';
import { apiErrorMessage } from '../../kube/api-error-message.ts';
import { createToolingClients, type ToolingClients } from '../../kube/tooling-clients.ts';
import { CertificateAuthority } from '../control-plane/pki.ts';
import { type LocalKubeletApi, type ServingPem, startLocalKubeletApi } from '../local-kubelet-api.ts';
import { type AddressChoice, chooseKubeletApiAddress, isIpv4 } from './address-choice.ts';
import { apiServerWhereabouts } from './host-network.ts';
import { servingFromCluster } from './serving-certificate.ts';

export const ADDRESS_VARIABLE = 'SVK_LOCAL_KUBELET_API_ADDRESS';
export const CLIENT_CA_VARIABLE = 'SVK_LOCAL_KUBELET_API_CLIENT_CA';

/** Where the client CA comes from: the kubeconfig's cluster CA, the API server's client CA ConfigMap, or a file. */
export type ClientCaSource = { kind: 'kubeconfig' } | { kind: 'cluster' } | { kind: 'file'; path: string };

export interface JoinedKubeletApiSettings {
  /** SVK_LOCAL_KUBELET_API_ADDRESS: the address to listen on, instead of the one chosen. */
  address?: string;
  /** SVK_LOCAL_KUBELET_API_CLIENT_CA: `kubeconfig` (default), `cluster`, or a PEM file. */
  clientCa: ClientCaSource;
}

/** Reads `npm start`'s kubelet API variables; a bad value is a ConfigError naming it. */
export function joinedKubeletApiSettingsFromEnv(
  env: Record<string, string | undefined>,
): JoinedKubeletApiSettings {
  const issues = [];
  const address = env[ADDRESS_VARIABLE]?.trim() || undefined;
  if (address !== undefined && !isIpv4(address)) {
    issues.push({
      variable: ADDRESS_VARIABLE,
      message: `must be an IPv4 address of this host (got "${address}")`,
    });
  }
  const ca = env[CLIENT_CA_VARIABLE]?.trim() || 'kubeconfig';
  const clientCa: ClientCaSource =
    ca === 'kubeconfig' || ca === 'cluster' ? { kind: ca } : { kind: 'file', path: ca };
  if (clientCa.kind === 'file' && !existsSync(clientCa.path)) {
    issues.push({
      variable: CLIENT_CA_VARIABLE,
      message: `must be kubeconfig, cluster, or a PEM file (no file ${clientCa.path})`,
    });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return { ...(address ? { address } : {}), clientCa };
}

export interface JoinedKubeletApiOptions {
  /** The kubeconfig `npm start` joined with (the user's): it reads the cluster and requests the certificates. */
  kubeconfig: string;
  /** The functions' environment: the kubelet API's variables are set on it (see startLocalKubeletApi). */
  env: Record<string, string | undefined>;
  nodes: readonly string[];
  settings: JoinedKubeletApiSettings;
  /** Where serving keys and certificates are kept between starts. */
  dir: string;
  log: (line: string) => void;
}

export interface JoinedKubeletApi {
  api: LocalKubeletApi;
  choice: Exclude<AddressChoice, { kind: 'none' }>;
}

/** The kubelet API for the joined cluster, or undefined (having said why) when it cannot be served. */
export async function startJoinedKubeletApi(
  options: JoinedKubeletApiOptions,
): Promise<JoinedKubeletApi | undefined> {
  const { env, nodes, settings, log } = options;
  const clients = createToolingClients(options.kubeconfig);
  const where = await apiServerWhereabouts(clients.context.server, clients.core, settings.address);
  const choice = chooseKubeletApiAddress(where);
  if (choice.kind === 'none') {
    log(`no kubelet API (kubectl logs will not work): ${choice.reason}`);
    return undefined;
  }
  log(`kubelet API ${choice.kind === 'address' ? `on ${choice.address}` : 'on loopback'}: ${choice.reason}`);
  const configured = env.SVK_KUBELET_API_CLIENT_CA_DATA;
  const clientCa = configured
    ? { pem: Buffer.from(configured, 'base64').toString('utf8'), from: 'SVK_KUBELET_API_CLIENT_CA_DATA' }
    : await clientCaPem(settings.clientCa, clients);
  if ('failed' in clientCa) {
    log(`no kubelet API (kubectl logs will not work): ${clientCa.failed}`);
    return undefined;
  }
  log(`kubelet API client CA: ${clientCa.from}`);
  // The function verifies client certificates against the same CA as the front.
  env.SVK_KUBELET_API_CLIENT_CA_DATA = Buffer.from(clientCa.pem).toString('base64');
  const dir = clusterServingDir(options.dir, clients.context.server, clients.context.ca);
  const api = await startLocalKubeletApi({
    env,
    nodes,
    ...(choice.kind === 'address' ? { address: choice.address } : {}),
    clientCa: clientCa.pem,
    serving: (node, address) => serving(clients, node, address, dir, log),
  });
  return { api, choice };
}

/** Where the serving certificates of one cluster are kept under `base`, so that one cluster's are never served to another. */
export function clusterServingDir(base: string, server: string, ca: Buffer | undefined): string {
  const key = createHash('sha256')
    .update(server)
    .update(ca ?? '')
    .digest('hex')
    .slice(0, 16);
  return join(base, key);
}

const CLIENT_CA_CONFIGMAP = 'kube-system/extension-apiserver-authentication';

async function clientCaPem(
  source: ClientCaSource,
  clients: ToolingClients,
): Promise<{ pem: string; from: string } | { failed: string }> {
  if (source.kind === 'file') return { pem: readFileSync(source.path, 'utf8'), from: source.path };
  if (source.kind === 'kubeconfig' && clients.context.ca) {
    return { pem: clients.context.ca.toString('utf8'), from: "the kubeconfig's cluster CA" };
  }
  // The API server's own --client-ca-file, published for aggregated API servers: k3s signs its kubelet client with it.
  try {
    const map = await clients.core.readNamespacedConfigMap({
      namespace: 'kube-system',
      name: 'extension-apiserver-authentication',
    });
    const pem = map.data?.['client-ca-file'];
    if (pem) return { pem, from: `client-ca-file of ConfigMap ${CLIENT_CA_CONFIGMAP}` };
    return {
      failed: `ConfigMap ${CLIENT_CA_CONFIGMAP} has no client-ca-file: set ${CLIENT_CA_VARIABLE} to a PEM file`,
    };
  } catch (err) {
    return {
      failed: `the kubeconfig names no cluster CA and ConfigMap ${CLIENT_CA_CONFIGMAP} cannot be read (${apiErrorMessage(err)}): set ${CLIENT_CA_VARIABLE} to a PEM file`,
    };
  }
}

/** The cluster signer's certificate for `node`, else one of our own CA (kept in `dir/own-ca`). */
async function serving(
  clients: ToolingClients,
  node: string,
  address: string,
  dir: string,
  log: (line: string) => void,
): Promise<ServingPem> {
  const signed = await servingFromCluster({ certificates: clients.certificates, node, address, dir, log });
  if ('pem' in signed) {
    log(`${node}: serving certificate from ${signed.how}`);
    return signed.pem;
  }
  const ca = await ownCa(dir);
  const files = await ca.issue(
    `${node}-own`,
    { commonName: `system:node:${node}`, usage: 'server', altNames: [`IP:${address}`] },
    dir,
  );
  log(
    `${node}: serving certificate of our own CA (${ca.cert}): ${signed.failed}; an API server that verifies kubelets (--kubelet-certificate-authority) will refuse it`,
  );
  return { cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
}

/** Our own CA for this cluster's serving certificates, made once (two starts at once keep the first one made). */
async function ownCa(dir: string): Promise<CertificateAuthority> {
  const caDir = join(dir, 'own-ca');
  if (!existsSync(join(caDir, 'ca.crt'))) {
    const fresh = mkdtempSync(join(dir, 'own-ca-'));
    await CertificateAuthority.create(fresh);
    try {
      renameSync(fresh, caDir);
    } catch {
      rmSync(fresh, { recursive: true, force: true });
    }
  }
  return CertificateAuthority.open(caDir);
}
