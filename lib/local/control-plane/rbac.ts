/** Installs the virtual kubelet's RBAC (`infra/rbac.yaml`) into the local cluster. */
import { readFileSync } from 'node:fs';
import { type KubeConfig, type KubernetesObject, loadAllYaml, PatchStrategy } from '@kubernetes/client-node';
import { createObjectClient } from '../../kube/tooling-clients.ts';

const RBAC_MANIFEST = new URL('../../../infra/rbac.yaml', import.meta.url);
const FIELD_MANAGER = 'svk-local-control-plane';

/** Server-side applies every object of `infra/rbac.yaml`, as cluster admin. */
export async function applyRbac(admin: KubeConfig): Promise<void> {
  const client = createObjectClient(admin);
  const objects: unknown[] = loadAllYaml(readFileSync(RBAC_MANIFEST, 'utf8'));
  for (const object of objects) {
    if (!isKubernetesObject(object)) continue;
    await client.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }
}

function isKubernetesObject(value: unknown): value is KubernetesObject {
  return typeof value === 'object' && value !== null && 'apiVersion' in value && 'kind' in value;
}
