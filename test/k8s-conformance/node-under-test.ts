/**
 * The cluster and the one virtual node the e2e specs run against, put
 * together from the same parts as `npm start` on its local defaults
 * (scripts/start.ts): the project's control plane, DynamoDB Local, the
 * kubelet API front on the control plane's CA, and the whole deployment
 * (the tick cadence, pod-sync behind the local bus) through the local Lambda
 * runtime; the docker provider on the project's Podman, with the specs'
 * images imported offline. The node carries no taint, as the specs' pods
 * carry no toleration.
 */
import { dirname, join } from 'node:path';
import { createToolingClients } from '../../lib/kube/tooling-clients.ts';
import { CertificateAuthority } from '../../lib/local/control-plane/pki.ts';
import { startControlPlane } from '../../lib/local/control-plane.ts';
import { startDynamoDbLocal } from '../../lib/local/dynamodb-local.ts';
import { LocalDeployment } from '../../lib/local/local-deployment.ts';
import { startLocalKubeletApi } from '../../lib/local/local-kubelet-api.ts';
import { startPodman } from '../../lib/local/podman.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { createTable } from '../../lib/state/table-definition.ts';
import { readyAndUntainted, waitFor } from '../support/kube.ts';
import { type ImageSources, importTestImages } from './images.ts';

export const NODE_NAME = 'svk-conformance';
const TABLE_NAME = 'svk-k8s-conformance';
const REGION = 'local';
const NODE_READY_TIMEOUT_MS = 120_000;

export interface NodeUnderTest {
  /** cluster-admin kubeconfig, for e2e.test. */
  adminKubeconfig: string;
  node: string;
  /** Stops everything started, in reverse order. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  dir: string;
  images: ImageSources;
  log: (line: string) => void;
  /** Where the functions' environment is built from (PATH...). */
  env?: NodeJS.ProcessEnv;
}

export async function startNodeUnderTest(options: StartOptions): Promise<NodeUnderTest> {
  const { dir, log } = options;
  const stops: Array<() => Promise<void>> = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      for (const s of stops.reverse()) await s().catch((err: unknown) => log(`stop failed: ${String(err)}`));
    })();
    return stopping;
  };
  try {
    const started = Date.now();
    const [controlPlane, dynamo, podman] = await Promise.all([
      startControlPlane({ dir: join(dir, 'control-plane'), log }).then((cp) => {
        stops.push(() => cp.stop());
        return cp;
      }),
      startDynamoDbLocal({ inMemory: true, log: () => undefined }).then((db) => {
        stops.push(() => db.stop());
        return db;
      }),
      startPodman({ dir: join(dir, 'podman'), log }).then(async (service) => {
        stops.push(() => service.stop());
        await importTestImages(join(dir, 'images'), options.images, service.env);
        return service;
      }),
    ]);
    const { client } = createDynamoDbClient({ endpoint: dynamo.endpoint, region: REGION });
    await createTable(client, TABLE_NAME);
    const env: Record<string, string | undefined> = {
      ...(options.env ?? process.env),
      SVK_PROVIDER: 'docker',
      SVK_KUBECONFIG: controlPlane.kubeletKubeconfig,
      SVK_DYNAMODB_ENDPOINT: dynamo.endpoint,
      AWS_REGION: REGION,
      SVK_TABLE_NAME: TABLE_NAME,
      SVK_NODE_NAMES: NODE_NAME,
      // The specs' pods carry no toleration: the node must not carry the provider's default taint.
      SVK_NODE_TAINTS: '',
      SVK_DOCKER_HOST: podman.dockerHost,
      SVK_DOCKER_NETWORK: podman.network,
    };
    const api = await startLocalKubeletApi({
      env,
      // The kubelet API with its own identity, as deployed.
      kubeconfig: controlPlane.kubeletApiKubeconfig,
      nodes: [NODE_NAME],
      ca: CertificateAuthority.open(dirname(controlPlane.ca.cert)),
      dir: join(dir, 'kubelet-api'),
    });
    stops.push(() => api.stop());
    // Each function as its own cluster user (infra/rbac.yaml), as EKS access entries map each function's role.
    const deployment = new LocalDeployment({ env, kubeconfigs: controlPlane.functionKubeconfigs });
    stops.push(() => deployment.stop({ abortRunning: true }));
    deployment.start();
    const admin = createToolingClients(controlPlane.adminKubeconfig);
    await waitFor(
      async () => readyAndUntainted(await admin.core.readNode({ name: NODE_NAME }).catch(() => undefined)),
      { timeoutMs: NODE_READY_TIMEOUT_MS, intervalMs: 500, what: `node ${NODE_NAME} Ready` },
    );
    log(
      `node ${NODE_NAME} Ready in ${((Date.now() - started) / 1000).toFixed(1)}s (docker provider on Podman)`,
    );
    return { adminKubeconfig: controlPlane.adminKubeconfig, node: NODE_NAME, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
