import { randomBytes } from 'node:crypto';
import type { V1Lease, V1Node, V1Pod } from '@kubernetes/client-node';
import { createKubeClients, isNotFound, type KubeClients } from '../../lib/kube/client.ts';
import { createToolingClients, type ToolingClients, toolingContext } from '../../lib/kube/tooling-clients.ts';
import { NODE_LEASE_NAMESPACE } from '../../lib/node/node-lease.ts';
import { StateTable } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { createTable } from '../../lib/state/table-definition.ts';
import { type TestEnv, testEnv } from './env.ts';

/** The admin's tooling clients or the virtual kubelet's own: the helpers that take either only read and delete. */
export type AnyClients = KubeClients | ToolingClients;

/** A name no other test (or earlier run against the same cluster) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/**
 * Cluster-admin clients: for setting up and asserting, never for the code
 * under test; client-node's whole API over our HTTP layer (tooling-clients.ts).
 */
export function adminClients(env: TestEnv = testEnv()): ToolingClients {
  return createToolingClients(env.kube.adminKubeconfig);
}

/** Clients with the virtual kubelet's own identity (bound to infra/rbac.yaml only). */
export function kubeletClients(env: TestEnv = testEnv()): KubeClients {
  return createKubeClients(toolingContext(env.kube.kubeletKubeconfig));
}

/**
 * Polls `probe` until it returns a value other than undefined/false, or
 * throws when `timeoutMs` passes, with the last value or error in the message.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `timed out after ${options.timeoutMs} ms waiting for ${options.what}; last: ${String(last)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 250));
  }
}

/** A new table in DynamoDB Local: each test is its own deployment, with its own locks. */
export async function freshTable(env: TestEnv = testEnv()): Promise<{ name: string; table: StateTable }> {
  const name = uniqueName('svk');
  const { client, doc } = createDynamoDbClient({
    endpoint: env.dynamodb.endpoint,
    region: env.dynamodb.region,
  });
  await createTable(client, name);
  return { name, table: new StateTable(doc, name) };
}

/**
 * The environment of the kubelet API function of a test deployment: its
 * functions' `functionEnv`, with the kubelet API's own identity.
 */
export function asKubeletApi<T extends Record<string, string | undefined>>(
  functions: T,
  env: TestEnv = testEnv(),
): T & { SVK_KUBECONFIG: string } {
  return { ...functions, SVK_KUBECONFIG: env.kube.kubeletApiKubeconfig };
}

/**
 * Each control-loop function's own kubeconfig (its user
 * `serverless-virtual-kubelet:<function>`, bound to that function's roles in
 * infra/rbac.yaml only), for a LocalDeployment's `kubeconfigs`: a call a
 * function's role lacks then fails with 403.
 */
export function functionKubeconfigs(env: TestEnv = testEnv()): TestEnv['kube']['functionKubeconfigs'] {
  return env.kube.functionKubeconfigs;
}

/** The environment a function of this test deployment runs with. */
export function functionEnv(tableName: string, overrides: Record<string, string>, env: TestEnv = testEnv()) {
  return {
    SVK_KUBECONFIG: env.kube.kubeletKubeconfig,
    ...(env.kube.podApiServer ? { SVK_POD_API_SERVER: env.kube.podApiServer } : {}),
    SVK_DYNAMODB_ENDPOINT: env.dynamodb.endpoint,
    AWS_REGION: env.dynamodb.region,
    SVK_TABLE_NAME: tableName,
    SVK_LOG_LEVEL: process.env.SVK_TEST_LOG_LEVEL ?? 'warn',
    ...overrides,
  };
}

export async function readNode(kube: AnyClients, name: string): Promise<V1Node | undefined> {
  try {
    return await kube.core.readNode({ name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function readLease(kube: AnyClients, name: string): Promise<V1Lease | undefined> {
  try {
    return await kube.coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function readyStatus(node: V1Node | undefined): string | undefined {
  return node?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

/** Ready=True and none of the node lifecycle controller's `node.kubernetes.io/` taints left. */
export function readyAndUntainted(node: V1Node | undefined): boolean {
  return (
    readyStatus(node) === 'True' && !node?.spec?.taints?.some((t) => t.key.startsWith('node.kubernetes.io/'))
  );
}

export function leaseAgeMs(lease: V1Lease | undefined, now = Date.now()): number | undefined {
  const renew = lease?.spec?.renewTime;
  return renew ? now - new Date(renew).getTime() : undefined;
}

export interface Sample {
  at: number;
  ready: string | undefined;
  leaseAgeMs: number | undefined;
}

/** Samples the node's Ready status and its lease age every second until stopped. */
export function sampleNode(kube: AnyClients, name: string): { samples: Sample[]; stop(): Promise<Sample[]> } {
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const [node, lease] = await Promise.all([readNode(kube, name), readLease(kube, name)]);
      samples.push({ at: started, ready: readyStatus(node), leaseAgeMs: leaseAgeMs(lease, started) });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_000 - (Date.now() - started))));
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
}

export async function deleteNodeAndLease(kube: AnyClients, name: string): Promise<void> {
  await kube.core.deleteNode({ name }).catch(() => undefined);
  await kube.coordination
    .deleteNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE })
    .catch(() => undefined);
}

/**
 * Creates a namespace and waits until its default service account has its
 * token: 1.20's admission refuses pods before that.
 */
export async function createTestNamespace(kube: ToolingClients, name: string): Promise<void> {
  await kube.core.createNamespace({ body: { metadata: { name } } });
  await waitFor(
    async () => {
      try {
        const sa = await kube.core.readNamespacedServiceAccount({ name: 'default', namespace: name });
        return (sa.secrets?.length ?? 0) > 0;
      } catch {
        return undefined;
      }
    },
    { timeoutMs: 30_000, what: `the token of service account default in ${name}` },
  );
}

/** Force-deletes every pod of a namespace (nothing may be running them), then the namespace. */
export async function deleteTestNamespace(kube: ToolingClients, name: string): Promise<void> {
  const pods = await kube.core.listNamespacedPod({ namespace: name }).catch(() => ({ items: [] as V1Pod[] }));
  await Promise.all(
    pods.items.map((p) =>
      kube.core
        .deleteNamespacedPod({ namespace: name, name: p.metadata?.name ?? '', gracePeriodSeconds: 0 })
        .catch(() => undefined),
    ),
  );
  await kube.core.deleteNamespace({ name }).catch(() => undefined);
}
