import type { V1Pod } from '@kubernetes/client-node';

/**
 * How a pod's objects are named and labelled on the engine. Names are
 * derived from the pod uid and the container name only, so that a create
 * repeated by a retry or a concurrent poller hits the engine's unique-name
 * rule instead of starting a second copy. Labels carry the pod's identity
 * and binding, so that every pod can be found, listed and deleted from the
 * engine's own state, whatever happened to ours.
 *
 * Kubernetes container and volume names are DNS labels (lowercase letters,
 * digits, `-`), so `_` separates the fields unambiguously.
 */

const PREFIX = 'io.serverless-virtual-kubelet';

export const LABELS = {
  uid: `${PREFIX}.pod-uid`,
  namespace: `${PREFIX}.pod-namespace`,
  name: `${PREFIX}.pod-name`,
  node: `${PREFIX}.node`,
  /** What the object is to the pod: see {@link Role}. */
  role: `${PREFIX}.role`,
  /** The Kubernetes container name (init and app containers). */
  container: `${PREFIX}.container`,
  /** Which instance of the container: 0, then one more per restart (the restartCount). */
  attempt: `${PREFIX}.attempt`,
  /** On the deletion marker: when the grace period ends (RFC 3339). */
  deadline: `${PREFIX}.deadline`,
  /** On a node's prober container (role `prober`, beside the pods' roles): the script it runs. */
  proberScript: `${PREFIX}.prober-script`,
} as const;

/**
 * - `infra`: holds the pod's network namespace (and the pod plan), runs until the pod is deleted;
 * - `init`, `app`: one instance of an init or app container;
 * - `deleting`: created, never started: the pod is being deleted, with a deadline.
 */
export type Role = 'infra' | 'init' | 'app' | 'deleting';

export const ROLES: readonly Role[] = ['infra', 'init', 'app', 'deleting'];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** The identity every object of a pod is labelled with. */
export interface PodIdentity {
  namespace: string;
  name: string;
  uid: string;
  node: string;
}

/** The identity a pod needs to be created here. */
export function podIdentity(pod: V1Pod): PodIdentity {
  const namespace = pod.metadata?.namespace;
  const name = pod.metadata?.name;
  const uid = pod.metadata?.uid;
  const node = pod.spec?.nodeName;
  if (!namespace || !name || !uid || !node) {
    const missing = [
      ...(namespace ? [] : ['metadata.namespace']),
      ...(name ? [] : ['metadata.name']),
      ...(uid ? [] : ['metadata.uid']),
      ...(node ? [] : ['spec.nodeName']),
    ];
    throw new Error(`docker provider: pod ${namespace ?? '?'}/${name ?? '?'} lacks ${missing.join(', ')}`);
  }
  return { namespace, name, uid, node };
}

/** A pod as messages name it. */
export function describe(pod: { namespace: string; name: string; uid: string }): string {
  return `${pod.namespace}/${pod.name} (uid ${pod.uid})`;
}

export function identityLabels(pod: PodIdentity): Record<string, string> {
  return {
    [LABELS.uid]: pod.uid,
    [LABELS.namespace]: pod.namespace,
    [LABELS.name]: pod.name,
    [LABELS.node]: pod.node,
  };
}

export function infraName(uid: string): string {
  return `svk_${uid}`;
}

/** The pod's port-forward relay: joins its network namespace while connections are forwarded (docker-streams.ts). */
export function relayName(uid: string): string {
  return `svk_${uid}_relay`;
}

export function deletingName(uid: string): string {
  return `svk_${uid}_deleting`;
}

export function instanceName(uid: string, role: 'init' | 'app', container: string, attempt: number): string {
  return `svk_${uid}_${role}_${container}_${attempt}`;
}

export function volumeName(uid: string, volume: string): string {
  return `svk_${uid}_${volume}`;
}

/**
 * The plan travels in the infra container's environment (`SVK_POD_PLAN=`),
 * not in a label: labels are repeated in every engine event and list, and
 * the plan holds the containers' env, which may come from Secrets. Whoever
 * can inspect containers on the engine can read it, exactly as they can read
 * the env of the containers themselves (the provider's trust boundary).
 */
export const PLAN_ENV = 'SVK_POD_PLAN';

/** A pod's volume of termination message files (termination-message.ts): not a DNS label, never a Kubernetes volume's name. */
export const TERMINATION_VOLUME = 'termination_messages';
/** Where the infra container mounts it. */
export const TERMINATION_DIR = '/svk-termination';

/** A pod's volume of its kubelet-managed /etc/hosts (etc-hosts.ts): not a DNS label, never a Kubernetes volume's name. */
export const HOSTS_VOLUME = 'etc_hosts';

/** Engine list filters (`label=key=value`). */
export function labelFilter(labels: Record<string, string>): string[] {
  return Object.entries(labels).map(([key, value]) => `${key}=${value}`);
}
