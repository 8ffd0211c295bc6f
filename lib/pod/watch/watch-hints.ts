import { createHash } from 'node:crypto';
import { hintResource, type PodEventDetail, type PodEventHint } from '../../events/pod-event.ts';
import { stableJson } from '../pod-hash.ts';
import { type ContainerStates, isTerminalPhase, running } from '../status/pod-status-builders.ts';
import type { WatchBatcher } from './watch-batcher.ts';
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
 * How long a `not-running` event waits to be superseded by the DELETED event
 * of its uid (WatchBatcher's `holdMs`): pod-sync writes a terminated status
 * and deletes the pod right after, the kubelet's order, and the two requests
 * take tens of milliseconds, a few hundred under load. Superseded, the event
 * costs no invocation; otherwise (another writer of the status: pod-status's
 * poll) it is sent this much later.
 */
export const NOT_RUNNING_HOLD_MS = 1_000;

const NOT_RUNNING = hintResource('not-running');

/** Hints with which an event would wake pod-sync only to do nothing: such events are not sent. */
const NOTHING_TO_DO: readonly PodEventHint[] = ['unchanged', 'deleted-next'];

/**
 * A watcher's memory of the pods it announced: what it last saw of each uid.
 * It must only hold events that were published: the watcher makes it forget
 * everything when a watch request ends otherwise than with every event it
 * received published (a failed publish, a stop, a 410 and the relist after
 * it: changes made while nobody watched are in no event).
 */
export class WatchHints {
  readonly #seen = new Map<string, string>();

  /**
   * The `resources` to send with this event, or undefined when the event is
   * not worth sending: one hinted `unchanged` or `deleted-next`, which
   * pod-sync skips without reading anything, because the reconcile of the
   * previous event of the uid (retried until it succeeds), or the DELETED
   * event that follows, covers it. Not sending it saves an event and an
   * invocation (a pod's life has three such events: the status pod-sync
   * writes at create, the terminated status, the force delete). The memory
   * keeps what the announced events said, so what follows is compared with
   * what pod-sync was told.
   */
  announce(type: WatchEventType, pod: WatchedPod): { resources: string[] } | undefined {
    const uid = pod.metadata?.uid;
    if (!uid) return { resources: [] };
    if (type === 'DELETED') {
      this.#seen.delete(uid);
      return { resources: [] };
    }
    const projection = syncProjection(pod);
    const hints = hintsFor(type, pod, this.#seen.get(uid), projection);
    if (hints.some((h) => NOTHING_TO_DO.includes(h))) return undefined;
    this.#seen.set(uid, projection);
    return { resources: hints.map(hintResource) };
  }

  /**
   * Queues this event in `batcher` as {@link announce} decides: with its
   * detail and resources, or, not worth sending, only its resourceVersion
   * (the watcher still moves past it). A `not-running` event is held for
   * the DELETED that usually follows ({@link NOT_RUNNING_HOLD_MS}).
   */
  push(
    batcher: Pick<WatchBatcher, 'push'>,
    event: { type: WatchEventType; pod: WatchedPod; detail: PodEventDetail; resourceVersion: string },
  ): void {
    const announced = this.announce(event.type, event.pod);
    if (!announced) {
      batcher.push(undefined, event.resourceVersion);
      return;
    }
    batcher.push(event.detail, event.resourceVersion, {
      resources: announced.resources,
      ...(announced.resources.includes(NOT_RUNNING) ? { holdMs: NOT_RUNNING_HOLD_MS } : {}),
    });
  }

  forget(): void {
    this.#seen.clear();
  }
}
