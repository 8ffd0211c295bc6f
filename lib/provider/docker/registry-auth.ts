import type { RegistryAuth } from './image-puller.ts';
import type { PodPlan } from './pod-plan.ts';

/** A Secret's data, decoded; undefined when it does not exist. */
export type PullSecretSource = (
  namespace: string,
  name: string,
) => Promise<Readonly<Record<string, string>> | undefined>;

/**
 * Registry credentials for a pod's image from its imagePullSecrets
 * (`kubernetes.io/dockerconfigjson` or the older `kubernetes.io/dockercfg`),
 * read when the image is pulled: they reach the engine only as the pull's
 * X-Registry-Auth header, never a container's configuration.
 */
export function registryAuthResolver(
  source: PullSecretSource,
): (plan: PodPlan, image: string) => Promise<RegistryAuth | undefined> {
  return async (plan, image) => {
    const registry = imageRegistry(image);
    for (const name of plan.imagePullSecrets) {
      const data = await source(plan.namespace, name);
      const auth = data && findAuth(data, registry);
      if (auth) return auth;
    }
    return undefined;
  };
}

/**
 * What the credentials of a pod's pulls depend on: its namespace and its
 * imagePullSecrets, in order (the first with an entry for the registry is
 * used); `''` for a pod without any. Pods of one scope pull with the same
 * credentials, so they may share a pull and its back-off; pods of two
 * scopes never do (see ImagePuller).
 */
export function pullScope(plan: Pick<PodPlan, 'namespace' | 'imagePullSecrets'>): string {
  // Neither a namespace nor a Secret's name can hold `/` or `,`.
  return plan.imagePullSecrets.length === 0 ? '' : `${plan.namespace}/${plan.imagePullSecrets.join(',')}`;
}

/** The registry host of an image reference, as Docker normalises it (`docker.io` for Docker Hub). */
export function imageRegistry(image: string): string {
  const first = image.split('/')[0] ?? '';
  const hasRegistry =
    image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasRegistry ? first : 'docker.io';
}

const DOCKER_HUB = new Set([
  'docker.io',
  'index.docker.io',
  'registry-1.docker.io',
  'https://index.docker.io/v1/',
]);

/** The entry of a dockerconfigjson/dockercfg for `registry`, as the credentials the engine takes. */
export function findAuth(data: Readonly<Record<string, string>>, registry: string): RegistryAuth | undefined {
  const auths = parseAuths(data);
  for (const [key, entry] of Object.entries(auths)) {
    const host = key.replace(/^https?:\/\//, '').split('/')[0] ?? '';
    const matches =
      host === registry || (DOCKER_HUB.has(registry) && (DOCKER_HUB.has(key) || DOCKER_HUB.has(host)));
    if (!matches || typeof entry !== 'object' || entry === null) continue;
    const e = entry as Record<string, unknown>;
    const decoded = typeof e.auth === 'string' ? Buffer.from(e.auth, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const username =
      typeof e.username === 'string' ? e.username : colon > 0 ? decoded.slice(0, colon) : undefined;
    const password =
      typeof e.password === 'string' ? e.password : colon > 0 ? decoded.slice(colon + 1) : undefined;
    return {
      ...(username !== undefined ? { username } : {}),
      ...(password !== undefined ? { password } : {}),
      ...(typeof e.identitytoken === 'string' ? { identitytoken: e.identitytoken } : {}),
      serveraddress: registry,
    };
  }
  return undefined;
}

function parseAuths(data: Readonly<Record<string, string>>): Record<string, unknown> {
  const parse = (text: string | undefined): unknown => {
    try {
      return text === undefined ? undefined : JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  const json = parse(data['.dockerconfigjson']);
  if (
    typeof json === 'object' &&
    json !== null &&
    'auths' in json &&
    typeof json.auths === 'object' &&
    json.auths
  )
    return json.auths as Record<string, unknown>;
  const cfg = parse(data['.dockercfg']);
  return typeof cfg === 'object' && cfg !== null ? (cfg as Record<string, unknown>) : {};
}
