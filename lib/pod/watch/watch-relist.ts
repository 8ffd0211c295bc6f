import type { EventPublisher } from '../../events/publisher.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { listNodePods } from '../../kube/node-pods.ts';
import { podKey } from '../../kube/pod-key.ts';
import type { Logger } from '../../log/logger.ts';
import type { KnownPodStore } from '../known/known-pods.ts';
import { relistDetails } from './watch-events.ts';
import { forgetAnotherClustersPods, type RelistReason } from './watch-resume.ts';

export interface RelistOptions {
  node: string;
  reason: RelistReason;
  core: CoreApi;
  knownPods: KnownPodStore;
  publisher: EventPublisher;
  log: Logger;
  /** Pods per LIST page. */
  pageSize: number;
  /** Aborts the publish (the watcher lost its lock or the invocation ended). */
  signal: AbortSignal;
}

/**
 * Lists the node's pods and publishes the relist events (watch-events.ts):
 * one per listed pod, and a GONE for each known pod the list lacks. After a
 * bookmark of another cluster, that cluster's known pods are forgotten
 * instead of announced. Resolves with the list's resourceVersion, up to
 * which everything is published, and how many events were.
 */
export async function relistNode(o: RelistOptions): Promise<{ resourceVersion: string; published: number }> {
  const { node, reason, knownPods, log } = o;
  const { pods, resourceVersion } = await listNodePods(o.core, node, o.pageSize);
  if (!resourceVersion) throw new Error(`pod list of ${node} returned no resourceVersion`);
  let known = await knownPods.list(node);
  if (reason === 'other-cluster') known = await forgetAnotherClustersPods(knownPods, known, pods, log);
  const { details, skipped } = relistDetails(node, pods, known, resourceVersion);
  for (const s of skipped) {
    log.warn({ pod: podKey(s.pod.metadata), reason: s.reason }, 'pod not announced');
  }
  const gone = details.filter((d) => d.type === 'GONE');
  o.signal.throwIfAborted();
  await o.publisher.publish(details, { signal: o.signal });
  for (const d of gone) {
    log.info({ pod: podKey(d), uid: d.uid }, 'pod deleted while nobody watched: announced as GONE');
  }
  log.info(
    { reason, resourceVersion, pods: pods.length, known: known.length, gone: gone.length },
    'pods listed and announced',
  );
  return { resourceVersion, published: details.length };
}
