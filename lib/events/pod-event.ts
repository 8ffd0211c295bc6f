import { z } from 'zod';
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
  node: z.string().max(253).regex(DNS_SUBDOMAIN, 'must be a node name'),
  namespace: z.string().max(63).regex(DNS_LABEL, 'must be a namespace name'),
  name: z.string().max(253).regex(DNS_SUBDOMAIN, 'must be a pod name'),
  uid: z.string().min(1).max(64),
  /** The pod's resourceVersion the watcher saw (the list's for GONE). */
  resourceVersion: z.string().regex(/^\d+$/, 'must be a resourceVersion'),
});

export type PodEventDetail = z.infer<typeof podEventDetailSchema>;

/** An EventBridge event as delivered to pod-sync: the envelope with a parsed detail. */
const podEventSchema = z.object({
  version: z.literal('0'),
  id: z.string().min(1),
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
