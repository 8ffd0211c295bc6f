import type { V1Pod } from '@kubernetes/client-node';
import type { CoreApi } from './core-api.ts';

/** Every pod bound to one node, and the resourceVersion the list was served at. */
export interface NodePodList {
  pods: V1Pod[];
  /** Every page of a paginated list is served at the first page's resourceVersion; a watch resumes from it. */
  resourceVersion: string | undefined;
}

/** The field selector of the pods bound to `node`, for lists and watches alike. */
export function nodePodsSelector(node: string): string {
  return `spec.nodeName=${node}`;
}

/** Lists every pod bound to `node`, across namespaces, page by page (`limit` and `_continue`). */
export async function listNodePods(core: CoreApi, node: string, pageSize = 500): Promise<NodePodList> {
  const pods: V1Pod[] = [];
  let resourceVersion: string | undefined;
  let next: string | undefined;
  do {
    const page = await core.listPodForAllNamespaces({
      fieldSelector: nodePodsSelector(node),
      limit: pageSize,
      ...(next ? { _continue: next } : {}),
    });
    pods.push(...page.items);
    resourceVersion ??= page.metadata?.resourceVersion;
    next = page.metadata?._continue || undefined;
  } while (next);
  return { pods, resourceVersion };
}
