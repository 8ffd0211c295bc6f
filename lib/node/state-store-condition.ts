import type { V1Node } from '@kubernetes/client-node';
import type { CoreApi } from '../kube/core-api.ts';
import { PatchStrategy, setHeaderOptions } from '../kube/patch.ts';
import type { ProviderNodeCondition } from '../provider/provider.ts';

/**
 * The node condition that says whether the state store (DynamoDB: locks,
 * known pods, bookmarks) can be reached. True while it cannot: the heartbeat
 * then renews the node's Lease without its lock, so Ready stays True, but
 * nothing that must happen once (pod creates and deletes, bookmarks, status
 * records, reconciler writes) is done until it answers again, so new pods
 * wait. Like the kubelet's pressure conditions, True is the bad state.
 */
export const STATE_STORE_CONDITION = 'StateStoreUnavailable';

/**
 * The field manager of the degraded write only. The heartbeat holder applies
 * the whole status with the main field manager, whose applied set always
 * carries this condition (False): applying True with that manager alone
 * would drop every other condition it owns. With its own manager the
 * degraded write changes this one condition, and the holder's next apply
 * (forced) takes it back.
 */
export const DEGRADED_FIELD_MANAGER = 'serverless-virtual-kubelet-degraded';

const applyOptions = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** What the heartbeat holder reports while it holds the lock: the store answers. */
export function stateStoreAvailable(): ProviderNodeCondition {
  return {
    type: STATE_STORE_CONDITION,
    status: 'False',
    reason: 'StateStoreReachable',
    message: 'the state table answers; the heartbeat holds its lock',
  };
}

/**
 * Marks the node degraded: the condition True, written by server-side apply
 * of that one condition under {@link DEGRADED_FIELD_MANAGER}. Returns the Node
 * as written.
 */
export async function markStateStoreUnavailable(
  core: CoreApi,
  node: string,
  since: Date,
  now: Date,
  current?: V1Node,
): Promise<V1Node> {
  const before = current?.status?.conditions?.find((c) => c.type === STATE_STORE_CONDITION);
  const body: V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: node },
    status: {
      conditions: [
        {
          type: STATE_STORE_CONDITION,
          status: 'True',
          reason: 'StateStoreUnreachable',
          message:
            `the state table cannot be reached since ${since.toISOString()}: the lease is renewed ` +
            'without the heartbeat lock; pods are not started or deleted until it answers',
          lastHeartbeatTime: now,
          lastTransitionTime:
            before?.status === 'True' && before.lastTransitionTime ? before.lastTransitionTime : now,
        },
      ],
    },
  };
  return core.patchNodeStatus(
    { name: node, body, fieldManager: DEGRADED_FIELD_MANAGER, force: true },
    applyOptions,
  );
}
