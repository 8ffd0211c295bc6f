import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { load } from 'js-yaml';

/**
 * Our own kubeconfig loader: the current context of a kubeconfig (a file,
 * inline YAML, or the default lookup), resolved into what a request needs.
 * It reads the fields the virtual kubelet's deployments use: the cluster's
 * `server`, `certificate-authority(-data)`, `insecure-skip-tls-verify` and
 * `tls-server-name`; the user's `token`, `token-file`,
 * `client-certificate(-data)` and `client-key(-data)`. A user or cluster
 * with anything else that changes how a request is sent (an `exec` plugin,
 * an `auth-provider`, `username`/`password`, impersonation with `as`, a
 * `proxy-url`) is handed to `@kubernetes/client-node`'s KubeConfig, loaded
 * by a dynamic import only then (client-node-credentials.ts): `npm start`
 * against an EKS or GKE kubeconfig (exec plugins) keeps working, while a
 * function never parses client-node when its kubeconfig does not need it.
 * Other fields (`extensions`, `preferences`, `disable-compression`) are
 * ignored, as client-node ignores them.
 *
 * The default lookup is kubectl's: the files of KUBECONFIG, merged (the
 * first file to set the current context or a named entry wins), else
 * ~/.kube/config, else the in-cluster service account.
 */

/** A kubeconfig could not be loaded or names no usable cluster. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** Where a kubeconfig comes from: a file, inline YAML (e.g. from configuration), or the default lookup. */
export type KubeConfigSource = { kubeconfigPath: string } | { kubeconfigYaml: string } | { default: true };

/** The current context of a kubeconfig, files read and data decoded. */
export interface ResolvedKubeconfig {
  /** The context's name (`in-cluster` for the service account). */
  context: string;
  /** The API server's URL, without a trailing slash. */
  server: string;
  ca?: Buffer;
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string;
  token?: string;
  /** Read again when older than a minute, as client-go does (projected service account tokens rotate). */
  tokenFile?: string;
  cert?: Buffer;
  key?: Buffer;
  /**
   * Fields of the user or cluster that only client-node's KubeConfig
   * handles; with them, `document` is handed to it for credentials.
   */
  delegated: string[];
  /** The merged kubeconfig with every relative path made absolute, for client-node when delegated. */
  document: KubeconfigDocument;
}

type YamlMap = Record<string, unknown>;

/** A kubeconfig as YAML holds it (named lists of clusters, users and contexts). */
export interface KubeconfigDocument {
  clusters: Array<{ name: string; cluster: YamlMap }>;
  users: Array<{ name: string; user: YamlMap }>;
  contexts: Array<{ name: string; context: YamlMap }>;
  'current-context'?: string;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The user fields that only client-node handles. */
const DELEGATED_USER_FIELDS = ['exec', 'auth-provider', 'username', 'password', 'as', 'as-groups', 'as-uid'];
/** Paths relative to the kubeconfig's own directory, as kubectl resolves them. */
const CLUSTER_PATHS = ['certificate-authority'];
const USER_PATHS = ['client-certificate', 'client-key', 'token-file'];

function isMap(value: unknown): value is YamlMap {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Parses one kubeconfig's YAML into its named lists, each relative path made
 * absolute against `dir` (the file's directory).
 * @throws KubeConfigError naming what is malformed (never quoting a value).
 */
export function parseKubeconfig(yaml: string, dir?: string): KubeconfigDocument {
  let parsed: unknown;
  try {
    parsed = load(yaml);
  } catch (err) {
    // js-yaml's message quotes the offending lines, which may hold a token: say where only.
    const mark = isMap(err) && isMap(err.mark) ? err.mark : undefined;
    const where = mark && typeof mark.line === 'number' ? ` (line ${mark.line + 1})` : '';
    throw new KubeConfigError(`not valid YAML${where}`);
  }
  if (parsed === undefined || parsed === null) parsed = {};
  if (!isMap(parsed)) throw new KubeConfigError('not a kubeconfig: a YAML mapping was expected');
  const current = parsed['current-context'];
  return {
    clusters: namedList(parsed, 'clusters', 'cluster').map((e) => ({
      name: e.name,
      cluster: absolute(e.value, CLUSTER_PATHS, dir),
    })),
    users: namedList(parsed, 'users', 'user').map((e) => ({
      name: e.name,
      user: absolute(e.value, USER_PATHS, dir),
    })),
    contexts: namedList(parsed, 'contexts', 'context').map((e) => ({ name: e.name, context: e.value })),
    ...(typeof current === 'string' && current !== '' ? { 'current-context': current } : {}),
  };
}

function namedList(doc: YamlMap, list: string, field: string): Array<{ name: string; value: YamlMap }> {
  const entries = doc[list];
  if (entries === undefined || entries === null) return [];
  if (!Array.isArray(entries)) throw new KubeConfigError(`${list} must be a list`);
  return entries.map((entry: unknown, i) => {
    if (!isMap(entry) || typeof entry.name !== 'string' || entry.name === '')
      throw new KubeConfigError(`${list}[${i}] has no name`);
    const value = entry[field] ?? {};
    if (!isMap(value)) throw new KubeConfigError(`${list}[${i}] (${entry.name}): ${field} must be a mapping`);
    return { name: entry.name, value };
  });
}

function absolute(value: YamlMap, fields: readonly string[], dir: string | undefined): YamlMap {
  if (!dir) return value;
  const out = { ...value };
  for (const field of fields) {
    const path = out[field];
    if (typeof path === 'string' && path !== '' && !isAbsolute(path)) out[field] = join(dir, path);
  }
  return out;
}

/** kubectl's merge: the first document to set the current context, or an entry of a name, wins. */
export function mergeKubeconfigs(docs: readonly KubeconfigDocument[]): KubeconfigDocument {
  const firstByName = <T extends { name: string }>(lists: T[][]): T[] => {
    const seen = new Set<string>();
    return lists.flat().filter((e) => !seen.has(e.name) && seen.add(e.name));
  };
  const current = docs.find((d) => d['current-context'])?.['current-context'];
  return {
    clusters: firstByName(docs.map((d) => d.clusters)),
    users: firstByName(docs.map((d) => d.users)),
    contexts: firstByName(docs.map((d) => d.contexts)),
    ...(current ? { 'current-context': current } : {}),
  };
}

/**
 * The document's current context, resolved: files read, base64 data decoded.
 * @throws KubeConfigError naming the context, cluster or user at fault.
 */
export function resolveCurrentContext(doc: KubeconfigDocument): ResolvedKubeconfig {
  const name = doc['current-context'];
  if (!name) throw new KubeConfigError('no current-context is set');
  const context = doc.contexts.find((c) => c.name === name)?.context;
  if (!context) throw new KubeConfigError(`current-context "${name}" is not among its contexts`);
  const clusterName = context.cluster;
  if (typeof clusterName !== 'string' || clusterName === '')
    throw new KubeConfigError(`context "${name}" names no cluster`);
  const cluster = doc.clusters.find((c) => c.name === clusterName)?.cluster;
  if (!cluster)
    throw new KubeConfigError(`context "${name}" names cluster "${clusterName}", which is not defined`);
  const userName = context.user;
  const user = typeof userName === 'string' ? doc.users.find((u) => u.name === userName)?.user : {};
  if (!user)
    throw new KubeConfigError(`context "${name}" names user "${String(userName)}", which is not defined`);
  return {
    context: name,
    ...clusterFields(clusterName, cluster),
    ...userFields(String(userName), user),
    delegated: [
      ...(cluster['proxy-url'] ? ['proxy-url'] : []),
      ...DELEGATED_USER_FIELDS.filter((f) => user[f] !== undefined && user[f] !== null && user[f] !== ''),
    ],
    document: doc,
  };
}

function clusterFields(name: string, cluster: YamlMap) {
  const server = cluster.server;
  if (typeof server !== 'string' || server === '')
    throw new KubeConfigError(`cluster "${name}" has no server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeConfigError(`cluster "${name}": server is not a URL`);
  }
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && insecure))
    throw new KubeConfigError(
      `cluster "${name}": server must be https (http only with insecure-skip-tls-verify: true)`,
    );
  const ca = material(`cluster "${name}"`, cluster, 'certificate-authority');
  const tlsServerName = cluster['tls-server-name'];
  return {
    server: server.replace(/\/+$/, ''),
    insecureSkipTlsVerify: insecure,
    ...(ca ? { ca } : {}),
    ...(typeof tlsServerName === 'string' && tlsServerName ? { tlsServerName } : {}),
  };
}

function userFields(name: string, user: YamlMap) {
  const where = `user "${name}"`;
  const cert = material(where, user, 'client-certificate');
  const key = material(where, user, 'client-key');
  if (Boolean(cert) !== Boolean(key))
    throw new KubeConfigError(`${where}: client-certificate and client-key must be given together`);
  const token = user.token;
  const tokenFile = user['token-file'];
  if (token !== undefined && typeof token !== 'string')
    throw new KubeConfigError(`${where}: token must be a string`);
  if (tokenFile !== undefined && typeof tokenFile !== 'string')
    throw new KubeConfigError(`${where}: token-file must be a path`);
  if (!token && tokenFile) readToken(tokenFile, where);
  return {
    ...(token ? { token } : !token && tokenFile ? { tokenFile } : {}),
    ...(cert && key ? { cert, key } : {}),
  };
}

/** A certificate or key from `<field>-data` (base64) or the file `<field>` names. */
function material(where: string, map: YamlMap, field: string): Buffer | undefined {
  const data = map[`${field}-data`];
  if (typeof data === 'string' && data !== '') {
    const bytes = Buffer.from(data, 'base64');
    if (bytes.length === 0) throw new KubeConfigError(`${where}: ${field}-data is not base64`);
    return bytes;
  }
  const path = map[field];
  if (typeof path !== 'string' || path === '') return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new KubeConfigError(
      `${where}: cannot read ${field} ${path}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
}

/** Reads a token file; the token is its content without surrounding white space. */
export function readToken(path: string, where = 'token-file'): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new KubeConfigError(
      `${where}: cannot read token-file ${path}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
}

/** Reads and parses a kubeconfig file. */
export function readKubeconfigFile(path: string): KubeconfigDocument {
  let yaml: string;
  try {
    yaml = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeConfigError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return parseKubeconfig(yaml, dirname(path));
  } catch (err) {
    throw err instanceof KubeConfigError ? new KubeConfigError(`${path}: ${err.message}`) : err;
  }
}

/**
 * The default lookup, as kubectl does it: KUBECONFIG's files merged, else
 * ~/.kube/config, else the in-cluster service account (KUBERNETES_SERVICE_HOST
 * and its token and CA); `env` and `home` are the process's unless given.
 * @throws KubeConfigError when there is none.
 */
export function defaultKubeconfig(
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
): KubeconfigDocument {
  const paths = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (paths.length > 0) {
    // kubectl skips files of the list that do not exist, as long as one does.
    const existing = paths.filter((p) => existsSync(p));
    if (existing.length === 0)
      throw new KubeConfigError(`none of KUBECONFIG's files exist: ${paths.join(', ')}`);
    return mergeKubeconfigs(existing.map(readKubeconfigFile));
  }
  const file = join(home, '.kube', 'config');
  if (existsSync(file)) return readKubeconfigFile(file);
  const host = env.KUBERNETES_SERVICE_HOST;
  if (host && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) return inClusterKubeconfig(host, env);
  throw new KubeConfigError(
    'no kubeconfig: KUBECONFIG is not set, ~/.kube/config does not exist and this is not a pod with a service account',
  );
}

function inClusterKubeconfig(host: string, env: NodeJS.ProcessEnv): KubeconfigDocument {
  const port = env.KUBERNETES_SERVICE_PORT || '443';
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    clusters: [
      {
        name: 'in-cluster',
        cluster: { server, 'certificate-authority': join(SERVICE_ACCOUNT_DIR, 'ca.crt') },
      },
    ],
    users: [{ name: 'in-cluster', user: { 'token-file': join(SERVICE_ACCOUNT_DIR, 'token') } }],
    contexts: [{ name: 'in-cluster', context: { cluster: 'in-cluster', user: 'in-cluster' } }],
    'current-context': 'in-cluster',
  };
}

/** The document a source names (before resolving its current context). */
export function kubeconfigDocument(source: KubeConfigSource): KubeconfigDocument {
  if ('kubeconfigPath' in source) return readKubeconfigFile(source.kubeconfigPath);
  if ('kubeconfigYaml' in source) return parseKubeconfig(source.kubeconfigYaml);
  return defaultKubeconfig();
}
