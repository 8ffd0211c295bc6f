import * as z from 'zod/mini';
import '../util/zod-mini.ts';
import { InvalidEventError } from './scheduled-event.ts';

/** The source and detail-type of every pod event; the pod-sync rule in serverless.yml matches exactly these. */
export const POD_EVENT_SOURCE = 'serverless-virtual-kubelet.pod-watch';
export const POD_EVENT_DETAIL_TYPE = 'PodChanged';
/** Well under EventBridge's 256 KB entry limit: a detail is a key and a few ids, never a whole pod. */
export const MAX_POD_EVENT_DETAIL_BYTES = 4_096;

/**
 * What the watcher saw. Events are hints: pod-sync reads the current pod from
 * the API server whatever the type says, so duplicates and reordering are
 * harmless. `GONE` is sent after a relist for pods the known-pod records have
 * but the list does not (deleted while no watch was running).
 */
export const POD_EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED', 'GONE'] as const;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const podEventDetailSchema = z.strictObject({
  /** Schema version of this detail. */
  v: z.literal(1),
  type: z.enum(POD_EVENT_TYPES),
  node: z.string().check(z.maxLength(253), z.regex(DNS_SUBDOMAIN, 'must be a node name')),
  namespace: z.string().check(z.maxLength(63), z.regex(DNS_LABEL, 'must be a namespace name')),
  name: z.string().check(z.maxLength(253), z.regex(DNS_SUBDOMAIN, 'must be a pod name')),
  uid: z.string().check(z.minLength(1), z.maxLength(64)),
  /** The pod's resourceVersion the watcher saw (the list's for GONE). */
  resourceVersion: z.string().check(z.regex(/^\d+$/, 'must be a resourceVersion')),
});

export type PodEventDetail = z.infer<typeof podEventDetailSchema>;

/**
 * What pod-watch saw in the pod at the event's resourceVersion beyond the
 * detail, so that pod-sync can skip reads or the whole reconcile:
 *
 * - `unchanged`: nothing pod-sync decides from (uid, node, spec and
 *   metadata, deletion, terminal phase, and whether a container runs once the
 *   pod is terminating) differs from the previous event this watcher sent for
 *   the uid, whose reconcile (retried until it succeeds) covers this one too:
 *   a status write, pod-sync's own included.
 * - `deleted-next`: a graceful delete with grace 0 and no finalizers; the
 *   API server deletes the pod in the same request, and the DELETED event
 *   that follows is the one to act on.
 * - `not-running`: terminating and no container running, so pod-sync
 *   force-deletes the pod at once (virtual-kubelet's node/podcontroller.go
 *   does the same on seeing it) without reading it again.
 *
 * They travel in the envelope's `resources` as
 * `serverless-virtual-kubelet:hint/<name>`, which a pod-sync that does not
 * know them ignores; the detail's schema stays as it is.
 */
export const POD_EVENT_HINTS = ['unchanged', 'deleted-next', 'not-running'] as const;
export type PodEventHint = (typeof POD_EVENT_HINTS)[number];

const HINT_PREFIX = 'serverless-virtual-kubelet:hint/';

export function hintResource(hint: PodEventHint): string {
  return `${HINT_PREFIX}${hint}`;
}

function isPodEventHint(value: string): value is PodEventHint {
  return (POD_EVENT_HINTS as readonly string[]).includes(value);
}

/** The hints among an event's resources; others (and unknown hints) are ignored. */
export function hintsOf(resources: readonly string[]): PodEventHint[] {
  return resources.flatMap((r) => {
    const name = r.startsWith(HINT_PREFIX) ? r.slice(HINT_PREFIX.length) : '';
    return isPodEventHint(name) ? [name] : [];
  });
}

/** An EventBridge event as delivered to pod-sync: the envelope with a parsed detail. */
const podEventSchema = z.object({
  version: z.literal('0'),
  id: z.string().check(z.minLength(1)),
  'detail-type': z.literal(POD_EVENT_DETAIL_TYPE),
  source: z.literal(POD_EVENT_SOURCE),
  account: z.string(),
  time: z.string(),
  region: z.string(),
  resources: z.array(z.string()),
  detail: podEventDetailSchema,
});

export type PodEvent = z.infer<typeof podEventSchema>;

/**
 * Validates an event delivered to pod-sync. @throws InvalidEventError naming
 * each bad field (which sends the event to the dead-letter queue).
 */
export function parsePodEvent(event: unknown): PodEvent {
  const size = Buffer.byteLength(JSON.stringify(event ?? null));
  if (size > 64 * 1024)
    throw new InvalidEventError(`pod event of ${size} bytes is larger than any pod event we send`);
  const parsed = podEventSchema.safeParse(event);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => `${i.path.join('.') || 'event'}: ${i.message}`);
  throw new InvalidEventError(`not a pod event: ${fields.join('; ')}`);
}
