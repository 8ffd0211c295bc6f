import { createHash } from 'node:crypto';
import { hintResource, type PodEventHint } from '../events/pod-event.ts';
import { stableJson } from './pod-hash.ts';
import { type ContainerStates, isTerminalPhase, running } from './pod-status-builders.ts';
import type { WatchEventType } from './watch-events.ts';

/**
 * The hints pod-watch sends with each event (see POD_EVENT_HINTS in
 * lib/events/pod-event.ts), from the pod as the watch delivered it and what
 * this watcher saw of the same uid before.
 */

/** The fields of a watched pod (JSON as the API server sent it) the hints read. */
export interface WatchedPod {
  metadata?: {
    uid?: string;
    resourceVersion?: string;
    managedFields?: unknown;
    deletionTimestamp?: string | Date;
    deletionGracePeriodSeconds?: number;
    finalizers?: readonly string[];
  };
  spec?: unknown;
  status?: ContainerStates & { phase?: string };
}

/**
 * What pod-sync decides from, as one string: spec and metadata (everything
 * but resourceVersion and managedFields, which every status write changes),
 * whether the phase is terminal, and once the pod is terminating whether a
 * container runs. Only compared with itself, so JSON dates need no care.
 */
export function syncProjection(pod: WatchedPod): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = pod.metadata ?? {};
  const terminating = metadata.deletionTimestamp !== undefined;
  const digest = createHash('sha256')
    .update(stableJson({ metadata, spec: pod.spec ?? {} }))
    .digest('base64url');
  return `${digest}|${isTerminalPhase(pod.status?.phase)}|${terminating ? running(pod.status) : ''}`;
}

/** The hints for one watch event of a pod, given the projection of the previous event of its uid. */
export function hintsFor(
  type: WatchEventType,
  pod: WatchedPod,
  previous: string | undefined,
  projection: string,
): PodEventHint[] {
  if (type === 'DELETED') return [];
  const meta = pod.metadata ?? {};
  if (type === 'MODIFIED' && meta.deletionGracePeriodSeconds === 0 && (meta.finalizers?.length ?? 0) === 0) {
    return ['deleted-next'];
  }
  if (previous === projection) return ['unchanged'];
  if (meta.deletionTimestamp !== undefined && !running(pod.status)) return ['not-running'];
  return [];
}

/**
 * A watcher's memory of the pods it announced: what it last saw of each uid.
 * It must only hold events that were published: the watcher makes it forget
 * everything when a watch request ends otherwise than with every event it
 * received published (a failed publish, a stop, a 410 and the relist after
 * it: changes made while nobody watched are in no event).
 */
export class WatchHints {
  readonly #seen = new Map<string, string>();

  /** The `resources` to send with this event; remembers it for the next event of the uid. */
  resourcesFor(type: WatchEventType, pod: WatchedPod): string[] {
    const uid = pod.metadata?.uid;
    if (!uid) return [];
    if (type === 'DELETED') {
      this.#seen.delete(uid);
      return [];
    }
    const projection = syncProjection(pod);
    const hints = hintsFor(type, pod, this.#seen.get(uid), projection);
    this.#seen.set(uid, projection);
    return hints.map(hintResource);
  }

  forget(): void {
    this.#seen.clear();
  }
}
