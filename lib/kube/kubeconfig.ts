import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { Cluster, KubeConfig, User } from '@kubernetes/client-node';
import { load } from 'js-yaml';

/**
 * Kubeconfigs are parsed and authenticated by `@kubernetes/client-node`'s
 * KubeConfig (every auth kind it supports: client certificates, tokens and
 * token files, exec plugins, OIDC and the other auth providers, basic auth,
 * impersonation, `proxy-url`, `tls-server-name`), loaded by a dynamic import
 * (client-node-kubeconfig.ts) so that no function parses client-node at
 * import. What is ours: where a kubeconfig comes from (a file, inline YAML
 * from Secrets Manager or SSM, kubectl's default lookup with its
 * first-wins merge of KUBECONFIG's files), and refusing a kubeconfig that
 * names no usable cluster with an error that says what is wrong and never
 * quotes a value.
 */

/** A kubeconfig could not be loaded or names no usable cluster. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** Where a kubeconfig comes from: a file, inline YAML (e.g. from configuration), or the default lookup. */
export type KubeConfigSource = { kubeconfigPath: string } | { kubeconfigYaml: string } | { default: true };

type YamlMap = Record<string, unknown>;
const LISTS = ['clusters', 'users', 'contexts'] as const;
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function isMap(value: unknown): value is YamlMap {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One kubeconfig's YAML as a mapping, checked where client-node would fail
 * with a TypeError or a message quoting the YAML, relative paths made
 * absolute against `dir` (kubectl's rule), and `token-file` handed to
 * client-node's token-file authenticator, which reads it again after a
 * minute (projected service account tokens rotate).
 */
function kubeconfigObject(yaml: string, dir?: string): YamlMap {
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
  const out: YamlMap = { ...parsed };
  for (const list of LISTS) {
    const entries = parsed[list] ?? [];
    if (!Array.isArray(entries)) throw new KubeConfigError(`${list} must be a list`);
    const field = list.slice(0, -1);
    out[list] = entries.map((entry: unknown, i) => {
      if (!isMap(entry) || typeof entry.name !== 'string' || entry.name === '')
        throw new KubeConfigError(`${list}[${i}] has no name`);
      const value = entry[field] ?? {};
      if (!isMap(value))
        throw new KubeConfigError(`${list}[${i}] (${entry.name}): ${field} must be a mapping`);
      return {
        ...entry,
        [field]: list === 'users' ? userEntry(value, dir) : absolute(value, ['certificate-authority'], dir),
      };
    });
  }
  return out;
}

function userEntry(user: YamlMap, dir: string | undefined): YamlMap {
  const out = absolute(user, ['client-certificate', 'client-key', 'token-file'], dir);
  const tokenFile = out['token-file'];
  if (tokenFile !== undefined && typeof tokenFile !== 'string')
    throw new KubeConfigError('token-file must be a path');
  if (tokenFile && !out.token && !out['auth-provider'] && !out.exec) {
    delete out['token-file'];
    out['auth-provider'] = { name: 'tokenFile', config: { tokenFile } };
  }
  return out;
}

function absolute(value: YamlMap, fields: readonly string[], dir: string | undefined): YamlMap {
  const out = { ...value };
  if (!dir) return out;
  for (const field of fields) {
    const path = out[field];
    if (typeof path === 'string' && path !== '' && !isAbsolute(path)) out[field] = join(dir, path);
  }
  return out;
}

/** client-node's KubeConfig class, imported on the first load. */
async function clientNode(): Promise<typeof KubeConfig> {
  return (await import('./client-node-kubeconfig.ts')).KubeConfig;
}

/** client-node's KubeConfig of one kubeconfig's YAML. */
async function clientNodeConfig(yaml: string, dir?: string): Promise<KubeConfig> {
  return parseWith(await clientNode(), yaml, dir);
}

/**
 * client-node's KubeConfig (the class given: tooling imports it statically)
 * of one kubeconfig's YAML; relative paths are against `dir`.
 * @throws KubeConfigError naming what is malformed (never quoting a value).
 */
export function parseWith(KubeConfigClass: typeof KubeConfig, yaml: string, dir?: string): KubeConfig {
  const object = kubeconfigObject(yaml, dir);
  const kc = new KubeConfigClass();
  try {
    // JSON is YAML; every path is absolute already.
    kc.loadFromString(JSON.stringify(object));
  } catch (err) {
    throw new KubeConfigError(clientNodeMessage(err, object));
  }
  return kc;
}

/** client-node's message for an invalid entry, in our words (its entries named, not numbered). */
function clientNodeMessage(err: unknown, object: YamlMap): string {
  const text = err instanceof Error ? err.message : String(err);
  const match = /^(clusters|users|contexts)\[(\d+)\]\.(\w+)(?:\.([\w-]+))? is missing$/.exec(text);
  if (!match) return text;
  const [, list = '', index = '0', , field] = match;
  const entry = (object[list] as YamlMap[])[Number(index)];
  const name = String(entry?.name);
  if (list === 'clusters' && field === 'server') return `cluster "${name}" has no server`;
  if (list === 'contexts' && field === 'cluster') return `context "${name}" names no cluster`;
  return `${list.slice(0, -1)} "${name}" has no ${field ?? 'entry'}`;
}

/** Reads a kubeconfig file into client-node's KubeConfig. */
async function fileConfig(path: string): Promise<KubeConfig> {
  const KubeConfigClass = await clientNode();
  return readWith(KubeConfigClass, path);
}

/** Reads a kubeconfig file into client-node's KubeConfig (the class given). */
export function readWith(KubeConfigClass: typeof KubeConfig, path: string): KubeConfig {
  let yaml: string;
  try {
    yaml = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeConfigError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return parseWith(KubeConfigClass, yaml, dirname(path));
  } catch (err) {
    throw err instanceof KubeConfigError ? new KubeConfigError(`${path}: ${err.message}`) : err;
  }
}

/**
 * kubectl's default lookup: KUBECONFIG's files merged (the first file to set
 * the current context, or an entry of a name, wins; client-node's own merge
 * refuses a name twice), else ~/.kube/config, else the in-cluster service
 * account; `env` and `home` are the process's unless given.
 * @throws KubeConfigError when there is none.
 */
export async function defaultKubeConfig(
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
): Promise<KubeConfig> {
  const paths = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (paths.length > 0) {
    // kubectl skips files of the list that do not exist, as long as one does.
    const existing = paths.filter((p) => existsSync(p));
    if (existing.length === 0)
      throw new KubeConfigError(`none of KUBECONFIG's files exist: ${paths.join(', ')}`);
    const [first, ...rest] = await Promise.all(existing.map(fileConfig));
    if (!first) throw new KubeConfigError('KUBECONFIG names no file');
    for (const kc of rest) {
      if (!first.getCurrentContext()) first.setCurrentContext(kc.getCurrentContext());
      const firstWins = <T extends { name: string }>(into: T[], from: T[]) => {
        for (const entry of from) if (!into.some((e) => e.name === entry.name)) into.push(entry);
      };
      firstWins(first.clusters, kc.clusters);
      firstWins(first.users, kc.users);
      firstWins(first.contexts, kc.contexts);
    }
    return first;
  }
  const file = join(home, '.kube', 'config');
  if (existsSync(file)) return fileConfig(file);
  const host = env.KUBERNETES_SERVICE_HOST;
  if (host && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) {
    const kc = new (await clientNode())();
    kc.loadFromCluster();
    return kc;
  }
  throw new KubeConfigError(
    'no kubeconfig: KUBECONFIG is not set, ~/.kube/config does not exist and this is not a pod with a service account',
  );
}

/** client-node's KubeConfig of a source, parsed (its current context not checked yet). */
export async function kubeConfigOf(source: KubeConfigSource): Promise<KubeConfig> {
  if ('kubeconfigPath' in source) return fileConfig(source.kubeconfigPath);
  if ('kubeconfigYaml' in source) return clientNodeConfig(source.kubeconfigYaml);
  return defaultKubeConfig();
}

/** What a request needs of a kubeconfig's current context that is fixed at load. */
export interface CheckedContext {
  /** The context's name. */
  context: string;
  /** The API server's URL, without a trailing slash. */
  server: string;
  cluster: Cluster;
  user: User;
  /** The cluster CA, read now (a missing file is refused at load, not at the first request). */
  ca?: Buffer;
}

/**
 * Checks that the current context names a usable cluster: what client-node
 * would only find out at the first request, or never.
 * @throws KubeConfigError naming the context, cluster or user at fault.
 */
export function checkCurrentContext(kc: KubeConfig): CheckedContext {
  const name = kc.getCurrentContext();
  if (!name) throw new KubeConfigError('no current-context is set');
  const context = kc.getContextObject(name);
  if (!context) throw new KubeConfigError(`current-context "${name}" is not among its contexts`);
  const cluster = kc.getCluster(context.cluster);
  if (!cluster)
    throw new KubeConfigError(`context "${name}" names cluster "${context.cluster}", which is not defined`);
  const user = context.user ? kc.getUser(context.user) : ({ name: '' } as User);
  if (!user)
    throw new KubeConfigError(`context "${name}" names user "${context.user}", which is not defined`);
  const where = `cluster "${cluster.name}"`;
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new KubeConfigError(`${where}: server is not a URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && cluster.skipTLSVerify))
    throw new KubeConfigError(
      `${where}: server must be https (http only with insecure-skip-tls-verify: true)`,
    );
  const ca = material(where, 'certificate-authority', cluster.caFile, cluster.caData);
  const userWhere = `user "${user.name}"`;
  const cert = material(userWhere, 'client-certificate', user.certFile, user.certData);
  const key = material(userWhere, 'client-key', user.keyFile, user.keyData);
  if (Boolean(cert) !== Boolean(key))
    throw new KubeConfigError(`${userWhere}: client-certificate and client-key must be given together`);
  if (user.token !== undefined && typeof user.token !== 'string')
    throw new KubeConfigError(`${userWhere}: token must be a string`);
  const tokenFile = user.authProvider?.config?.tokenFile;
  if (typeof tokenFile === 'string') material(userWhere, 'token-file', tokenFile, undefined);
  return { context: name, server: cluster.server.replace(/\/+$/, ''), cluster, user, ...(ca ? { ca } : {}) };
}

function material(where: string, field: string, file: string | undefined, data: string | undefined) {
  if (file) {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new KubeConfigError(
        `${where}: cannot read ${field} ${file}: ${(err as NodeJS.ErrnoException).code}`,
      );
    }
  }
  if (!data) return undefined;
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length === 0) throw new KubeConfigError(`${where}: ${field}-data is not base64`);
  return bytes;
}
