import type { StoredItem } from '../../state/dynamodb.ts';
import type { KnownPod, KnownPodIdentity } from './known-pod.ts';
import type { KnownPodClaim } from './known-pod-claim.ts';

/** A known-pod record as an item of the state table, and back (see KnownPod). */

export function knownPodKey(node: string, namespace: string, name: string): { pk: string; sk: string } {
  return { pk: `pods#${node}`, sk: `${namespace}/${name}` };
}

/** gsi1 partition of records with a force-delete due, sorted by due time. */
export const FORCE_DELETE_INDEX_PARTITION = 'force-delete';

export function forceDeleteSortKey(pod: KnownPodIdentity, forceDeleteAt: string): string {
  return `${forceDeleteAt}#${pod.node}#${pod.namespace}/${pod.name}`;
}

/**
 * When the force delete of a record is due for pod-status and the
 * reconciler: its grace period's end, or the end of its hand-off to pod-sync
 * if later (ISO strings of one format compare as times).
 */
export function forceDeleteDueAt(
  pod: Pick<KnownPod, 'forceDeleteAt' | 'handedOffUntil'>,
): string | undefined {
  const { forceDeleteAt, handedOffUntil } = pod;
  if (!forceDeleteAt || !handedOffUntil) return forceDeleteAt;
  return handedOffUntil > forceDeleteAt ? handedOffUntil : forceDeleteAt;
}

export function toItem(pod: KnownPod): StoredItem {
  const due = forceDeleteDueAt(pod);
  return {
    ...knownPodKey(pod.node, pod.namespace, pod.name),
    ...pod,
    ...(due ? { gsi1pk: FORCE_DELETE_INDEX_PARTITION, gsi1sk: forceDeleteSortKey(pod, due) } : {}),
  };
}

function isClaim(value: unknown): value is KnownPodClaim {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.token === 'string' &&
    typeof c.owner === 'string' &&
    typeof c.hash === 'string' &&
    typeof c.until === 'string'
  );
}

export function fromItem(item: StoredItem): KnownPod {
  const {
    node,
    namespace,
    name,
    uid,
    appliedHash,
    activeDeadlineSeconds,
    claim,
    statusHash,
    pushUntil,
    forceDeleteAt,
    handedOffUntil,
    version,
  } = item;
  if (
    typeof node !== 'string' ||
    typeof namespace !== 'string' ||
    typeof name !== 'string' ||
    typeof uid !== 'string' ||
    typeof version !== 'number' ||
    (claim !== undefined && !isClaim(claim))
  ) {
    throw new Error(`known-pod record ${item.pk} ${item.sk} is malformed`);
  }
  return {
    node,
    namespace,
    name,
    uid,
    version,
    ...(typeof appliedHash === 'string' ? { appliedHash } : {}),
    ...(typeof activeDeadlineSeconds === 'number' ? { activeDeadlineSeconds } : {}),
    ...(claim
      ? { claim: { token: claim.token, owner: claim.owner, hash: claim.hash, until: claim.until } }
      : {}),
    ...(typeof statusHash === 'string' ? { statusHash } : {}),
    ...(typeof pushUntil === 'string' ? { pushUntil } : {}),
    ...(typeof forceDeleteAt === 'string' ? { forceDeleteAt } : {}),
    ...(typeof handedOffUntil === 'string' ? { handedOffUntil } : {}),
  };
}

/** The update expression parts that write a record's identity. */
export const IDENTITY_SET = '#node = :node, #ns = :ns, #name = :name, #uid = :uid';
export const IDENTITY_NAMES = { '#node': 'node', '#ns': 'namespace', '#name': 'name', '#uid': 'uid' };

export function identityValues(identity: KnownPodIdentity): Record<string, string> {
  return { ':node': identity.node, ':ns': identity.namespace, ':name': identity.name, ':uid': identity.uid };
}

/** The condition that a claim with `:token` holds the record. */
export const HELD_BY = '#claim.#token = :token';

export function heldBy(token: string) {
  return {
    expression: HELD_BY,
    names: { '#claim': 'claim', '#token': 'token' },
    values: { ':token': token },
  };
}

/** The version attribute every versioned write names. */
export const VERSION = { '#v': 'version' };

/** `current` unchanged since it was read, or no record when there was none. */
export function unchangedSince(current: KnownPod | undefined, identity: KnownPodIdentity) {
  return current === undefined
    ? { expression: 'attribute_not_exists(pk)' }
    : {
        expression: '#v = :v AND #uid = :uid',
        names: { ...VERSION, '#uid': 'uid' },
        values: { ':v': current.version, ':uid': identity.uid },
      };
}
