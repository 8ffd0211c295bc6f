import { readFileSync } from 'node:fs';
import type { FunctionUser } from '../../lib/local/control-plane/credentials.ts';

/**
 * What the integration orchestrator (`test/run-integration.ts`) started for this
 * test run: one real control plane and one DynamoDB Local shared by every
 * integration test file. Tests isolate themselves by unique node names,
 * namespaces and key prefixes, never by assuming an empty cluster or table.
 */
export interface TestEnv {
  kube: {
    /** https URL of the kube-apiserver on loopback. */
    server: string;
    /** `host:port` where pods on the engine's bridge reach it (SVK_POD_API_SERVER); absent without a gateway. */
    podApiServer?: string;
    /** kubeconfig path with cluster-admin rights (test setup and assertions only). */
    adminKubeconfig: string;
    /** kubeconfig path for the virtual kubelet's own identity, bound to infra/rbac.yaml only. */
    kubeletKubeconfig: string;
    /** kubeconfig path for the kubelet API's own identity, bound to its ClusterRole of infra/rbac.yaml only. */
    kubeletApiKubeconfig: string;
    /** kubeconfig paths of each control-loop function's own user (`serverless-virtual-kubelet:<function>`), bound to its roles in infra/rbac.yaml only. */
    functionKubeconfigs: Record<FunctionUser, string>;
    /** The cluster CA's certificate and key (the kubelet API's serving and test client certificates). */
    ca: { cert: string; key: string };
  };
  dynamodb: {
    /** http URL of DynamoDB Local on loopback. */
    endpoint: string;
    /** Name of the table created from infra/dynamodb-table.yml. */
    tableName: string;
    region: string;
  };
  /** Directory holding the control plane's pid files, for tests that stop/start components. */
  controlPlaneDir: string;
  /** The orchestrator's control channel: POST /apiserver/stop, /apiserver/start, /controllers/restart. */
  controlUrl: string;
  /** http URL of etcd's client port (its v3 JSON gateway), e.g. to compact it. */
  etcdUrl: string;
  /**
   * The engine serving the Docker Engine API for the Docker provider: a
   * Podman service (lib/local/podman.ts), or with SVK_TEST_ENGINE=dockerd a
   * Docker Engine (lib/local/dockerd.ts).
   */
  docker: {
    engine: 'podman' | 'dockerd';
    /** `unix://<socket>`, for SVK_DOCKER_HOST. */
    host: string;
    /** Its bridge network, for SVK_DOCKER_NETWORK. */
    network: string;
    /** Its directory (configuration, storage, logs). */
    dir: string;
    /**
     * Docker Engine's own TLS endpoint (`dockerd --tlsverify`), with the
     * directory of a client certificate it trusts (ca.pem, cert.pem,
     * key.pem); absent for Podman, which serves no TLS of its own.
     */
    tls?: { host: string; certPath: string };
  };
  /**
   * A registry (lib/local/registry.ts) over plain HTTP with basic auth,
   * which the Podman service treats as insecure: images pushed there are
   * pulled only with its credentials.
   */
  registry: {
    /** `127.0.0.1:<port>`. */
    address: string;
    username: string;
    password: string;
  };
}

/** Reads the environment described by the JSON file named in SVK_TEST_ENV. */
export function testEnv(): TestEnv {
  const path = process.env.SVK_TEST_ENV;
  if (!path) {
    throw new Error('SVK_TEST_ENV is not set: run integration tests through `npm run test:integration`');
  }
  return JSON.parse(readFileSync(path, 'utf8')) as TestEnv;
}

export type ControlPlaneAction = 'apiserver/stop' | 'apiserver/start' | 'controllers/restart';

/**
 * Asks the orchestrator to stop or start the shared kube-apiserver, or to
 * restart the controller-manager and scheduler. A test that stops the API
 * server restarts both when it is done, so that the controllers' informer
 * backoff from the outage does not delay how later tests are judged.
 */
export async function controlPlane(action: ControlPlaneAction, env: TestEnv = testEnv()): Promise<void> {
  const res = await fetch(`${env.controlUrl}/${action}`, { method: 'POST' });
  if (res.status !== 204) throw new Error(`control plane ${action}: ${res.status} ${await res.text()}`);
}

/** Stops or starts the shared kube-apiserver. */
export function apiServer(action: 'stop' | 'start', env: TestEnv = testEnv()): Promise<void> {
  return controlPlane(`apiserver/${action}`, env);
}

/**
 * After an outage test: the API server up again, and the controller-manager
 * and scheduler restarted so that their informers relist at once.
 */
export async function restoreControlPlane(env: TestEnv = testEnv()): Promise<void> {
  await apiServer('start', env);
  await controlPlane('controllers/restart', env);
}
