import { type PodEventDetail, podEventDetailSchema } from '../../events/pod-event.ts';
import { apiStatusCode } from '../../kube/client.ts';
import { podKey } from '../../kube/pod-key.ts';
import type { KnownPod } from '../known/known-pods.ts';

/**
 * Pure translation from what the API server says about a node's pods to the
 * pod events the watcher publishes: one per watch event, and after a (re)list
 * one per listed pod plus a GONE for each remembered pod the list lacks.
 */

/** The fields of a pod (or a watch event object) the watcher reads. */
export interface PodLike {
  metadata?: { namespace?: string; name?: string; uid?: string; resourceVersion?: string };
  spec?: { nodeName?: string };
}

export const WATCH_EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED'] as const;
export type WatchEventType = (typeof WATCH_EVENT_TYPES)[number];

export function isWatchEventType(type: string): type is WatchEventType {
  return (WATCH_EVENT_TYPES as readonly string[]).includes(type);
}

export function isPodLike(value: unknown): value is PodLike {
  return typeof value === 'object' && value !== null;
}

/** The object's metadata.resourceVersion, when it has one (BOOKMARK objects carry only that). */
export function resourceVersionOf(object: unknown): string | undefined {
  const rv = isPodLike(object) ? object.metadata?.resourceVersion : undefined;
  return typeof rv === 'string' && rv.length > 0 ? rv : undefined;
}

/**
 * The event detail for a pod of `node`, or a reason why there is none (a pod
 * without identity, or bound to another node: never ours to announce).
 */
export function podDetail(
  type: PodEventDetail['type'],
  pod: PodLike,
  node: string,
  resourceVersion?: string,
): PodEventDetail | { skip: string } {
  const { namespace, name, uid } = pod.metadata ?? {};
  const rv = resourceVersion ?? pod.metadata?.resourceVersion;
  if (!namespace || !name || !uid || !rv)
    return { skip: 'pod without namespace, name, uid or resourceVersion' };
  if (pod.spec?.nodeName !== node) return { skip: `pod bound to ${pod.spec?.nodeName ?? 'no node'}` };
  return checked({ v: 1, type, node, namespace, name, uid, resourceVersion: rv });
}

/**
 * The detail, or why it cannot be sent. The publisher rejects an invalid
 * detail with its whole batch; skipping it here keeps one odd object from
 * blocking the watch forever.
 */
function checked(detail: PodEventDetail): PodEventDetail | { skip: string } {
  const parsed = podEventDetailSchema.safeParse(detail);
  if (parsed.success) return detail;
  return { skip: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
}

/**
 * The events of a (re)list of `node` at `listResourceVersion`: ADDED for a
 * pod the known-pod records do not have (with this uid), MODIFIED for one
 * they have, and GONE for every record whose pod is not in the list, or is
 * there under a new uid (deleted and re-created while nobody watched).
 */
export function relistDetails(
  node: string,
  pods: readonly PodLike[],
  known: readonly KnownPod[],
  listResourceVersion: string,
): { details: PodEventDetail[]; skipped: Array<{ pod: PodLike; reason: string }> } {
  const knownByKey = new Map(known.map((k) => [podKey(k), k]));
  const listedUids = new Map<string, string>();
  const details: PodEventDetail[] = [];
  const skipped: Array<{ pod: PodLike; reason: string }> = [];
  for (const pod of pods) {
    const uid = pod.metadata?.uid;
    const key = podKey(pod.metadata);
    const type = uid !== undefined && knownByKey.get(key)?.uid === uid ? 'MODIFIED' : 'ADDED';
    const detail = podDetail(type, pod, node);
    if ('skip' in detail) {
      skipped.push({ pod, reason: detail.skip });
      continue;
    }
    listedUids.set(key, detail.uid);
    details.push(detail);
  }
  for (const record of known) {
    if (record.node !== node || listedUids.get(podKey(record)) === record.uid) continue;
    const detail = checked({
      v: 1,
      type: 'GONE',
      node,
      namespace: record.namespace,
      name: record.name,
      uid: record.uid,
      resourceVersion: listResourceVersion,
    });
    if ('skip' in detail) skipped.push({ pod: { metadata: record }, reason: detail.skip });
    else details.push(detail);
  }
  return { details, skipped };
}

/** A watch failure in a few words: the error's message, the Status object's message, or its code. */
export function describeStatus(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (isPodLike(err) && 'message' in err && typeof err.message === 'string') return err.message;
  return `status ${apiStatusCode(err) ?? 'unknown'}`;
}
