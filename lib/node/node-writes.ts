import type { V1Node } from '@kubernetes/client-node';
import type { NodeSettings } from '../config/node-settings.ts';
import { isConflict, type KubeClients } from '../kube/client.ts';
import { PatchStrategy, setHeaderOptions } from '../kube/patch.ts';
import type { Logger } from '../log/logger.ts';
import type { ProviderNodeStatus } from '../provider/provider.ts';
import { FIELD_MANAGER, metadataPatch, registrationNode } from './node-object.ts';

const mergePatchOptions = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Who writes the Node: its clients and the log its lines go to. */
export interface NodeWriter {
  kube: KubeClients;
  log: Logger;
}

/**
 * Creates the Node with the settings' labels and taints, and `kubernetes.io/arch`
 * from the provider's `report` when there is one; one created meanwhile by another actor is read and used.
 */
export async function registerNode(
  { kube, log }: NodeWriter,
  name: string,
  settings: NodeSettings,
  report?: ProviderNodeStatus,
): Promise<V1Node> {
  try {
    const node = await kube.core.createNode({
      body: registrationNode(name, settings, report?.nodeInfo.architecture),
      fieldManager: FIELD_MANAGER,
    });
    log.info({ uid: node.metadata?.uid }, 'registered node');
    return node;
  } catch (err) {
    if (!isConflict(err)) throw err;
    return kube.core.readNode({ name });
  }
}

/**
 * Brings the Node's labels and taints to the settings in use, `kubernetes.io/arch`
 * to the provider's `report` when there is one (a merge patch
 * that leaves other actors' labels and taints alone), conditional on the
 * Node's resourceVersion; returns the Node as it is then.
 */
export async function syncNodeMetadata(
  { kube, log }: NodeWriter,
  settings: NodeSettings,
  current: V1Node,
  report?: ProviderNodeStatus,
): Promise<V1Node> {
  const name = current.metadata?.name ?? '';
  let node = current;
  for (let attempt = 1; ; attempt++) {
    const body = metadataPatch(name, settings, node, report?.nodeInfo.architecture);
    if (!body) return node;
    try {
      node = await kube.core.patchNode({ name, body, fieldManager: FIELD_MANAGER }, mergePatchOptions);
      log.info('node labels and taints updated to the config in use');
      return node;
    } catch (err) {
      // Someone else changed the Node since we read it: read it again and retry once.
      if (!isConflict(err) || attempt > 1) throw err;
      node = await kube.core.readNode({ name });
    }
  }
}
