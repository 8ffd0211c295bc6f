import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import { isNamespaceGoing } from '../../kube/api-error-message.ts';
import { isConflict } from '../../kube/client.ts';
import type { CoreApi } from '../../kube/core-api.ts';
import { PatchStrategy, setHeaderOptions } from '../../kube/patch.ts';
import type { Logger } from '../../log/logger.ts';

/** Event reasons on pods, from virtual-kubelet's node/pod.go. */
export const POD_EVENT_REASONS = {
  createSuccess: 'ProviderCreateSuccess',
  createFailed: 'ProviderCreateFailed',
  updateSuccess: 'ProviderUpdateSuccess',
  updateFailed: 'ProviderUpdateFailed',
  deleteSuccess: 'ProviderDeleteSuccess',
  deleteFailed: 'ProviderDeleteFailed',
} as const;

export type PodEventType = 'Normal' | 'Warning';

/**
 * Records Kubernetes Events on pods, as client-go's EventRecorder does for
 * the kubelet. Best effort: an Event that cannot be written is logged and
 * never fails the caller.
 */
export interface PodEventRecorder {
  record(pod: V1Pod, type: PodEventType, reason: string, message: string): Promise<void>;
}

export interface KubePodEventRecorderOptions {
  core: CoreApi;
  clock: Clock;
  log: Logger;
  /** `source.component` and `reportingComponent`. */
  component?: string;
}

const COMPONENT = 'serverless-virtual-kubelet';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Writes core/v1 Events. The name is derived from the pod's uid, the reason
 * and the message, so that the same Event repeated (a retried delivery, a
 * ConfigMap still missing) updates one object's lastTimestamp instead of
 * piling up new ones; the count stays 1 because RBAC grants no `get` on
 * events to read it back.
 */
export class KubePodEventRecorder implements PodEventRecorder {
  constructor(private readonly options: KubePodEventRecorderOptions) {}

  async record(pod: V1Pod, type: PodEventType, reason: string, message: string): Promise<void> {
    const { core, clock, log } = this.options;
    const namespace = pod.metadata?.namespace ?? 'default';
    const podName = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    const node = pod.spec?.nodeName ?? '';
    const component = this.options.component ?? COMPONENT;
    const name = eventName(podName, uid, reason, message);
    const now = new Date(clock.now());
    try {
      try {
        await core.createNamespacedEvent({
          namespace,
          body: {
            metadata: { name, namespace },
            involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace, name: podName, uid },
            reason,
            message,
            type,
            count: 1,
            firstTimestamp: now,
            lastTimestamp: now,
            source: { component, ...(node ? { host: node } : {}) },
            reportingComponent: component,
            reportingInstance: node,
          },
        });
      } catch (err) {
        if (!isConflict(err)) throw err;
        await core.patchNamespacedEvent(
          { name, namespace, body: { lastTimestamp: now.toISOString(), message } },
          mergePatch,
        );
      }
    } catch (err) {
      // A namespace being deleted refuses new Events (one per pod it still holds): expected, not a fault.
      if (isNamespaceGoing(err))
        log.debug({ err, reason }, 'event not recorded: its namespace is being deleted');
      else log.warn({ err, reason }, 'could not record event on pod');
    }
  }
}

/** `<pod>.<16 hex>`, the shape client-go gives event names, within the 253-character limit. */
export function eventName(podName: string, uid: string, reason: string, message: string): string {
  const suffix = createHash('sha256').update(`${uid}\n${reason}\n${message}`).digest('hex').slice(0, 16);
  return `${podName.slice(0, 253 - 17)}.${suffix}`;
}
