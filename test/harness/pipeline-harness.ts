import { AppsV1Api, BatchV1Api } from '@kubernetes/client-node';
import { createToolingClients, type ToolingClients } from '../../lib/kube/tooling-clients.ts';
import type { Cadence } from '../../lib/local/cadence.ts';
import type { FunctionKubeconfigs } from '../../lib/local/deployment-handlers.ts';
import {
  LocalDeployment,
  type LocalDeploymentOptions,
  type PodSyncConcurrency,
} from '../../lib/local/local-deployment.ts';
import { StateTable } from '../../lib/state/dynamodb.ts';
import { createDynamoDbClient } from '../../lib/state/dynamodb-clients.ts';
import { createTable } from '../../lib/state/table-definition.ts';
import {
  createTestNamespace,
  deleteNodeAndLease,
  deleteTestNamespace,
  readNode,
  readyStatus,
  uniqueName,
  waitFor,
} from '../support/kube.ts';
import { HarnessPods } from './harness-pods.ts';
import { InvocationTally } from './invocation-tally.ts';
import type { ProviderProbe, ProviderSetup } from './provider-setup.ts';

/**
 * Where the harness finds the real components: a kube-apiserver with
 * controller-manager and scheduler, and DynamoDB Local. The integration
 * orchestrator's `TestEnv` has this shape; a benchmark builds it from the
 * control plane it started.
 */
export interface HarnessEnvironment {
  kube: {
    /** cluster-admin kubeconfig: for setting up and asserting. */
    adminKubeconfig: string;
    /** The virtual kubelet's own identity (infra/rbac.yaml), used by the functions. */
    kubeletKubeconfig: string;
    /**
     * Each control-loop function's own user (infra/rbac.yaml), by function: when given, each
     * function runs with its own instead of kubeletKubeconfig (unless `env` sets SVK_KUBECONFIG),
     * so a call its role lacks fails with 403.
     */
    functionKubeconfigs?: FunctionKubeconfigs;
    /** Where pods reach the API server (SVK_POD_API_SERVER), when they can. */
    podApiServer?: string;
  };
  dynamodb: { endpoint: string; region: string };
}

export interface PipelineHarnessOptions {
  environment: HarnessEnvironment;
  provider: ProviderSetup;
  /** How many virtual nodes the deployment serves. Default 1. */
  nodeCount?: number;
  /** Prefix of the node names (a random suffix is added). Default `conf-<provider>`. */
  nodePrefix?: string;
  /** Function environment on top of the harness's (which shortens periods for tests). */
  env?: Record<string, string>;
  /** How the node and pod loops run; default the local deployment's (serverless.yml's `tick`). */
  cadence?: Cadence;
  /** Schedule of the scheduled functions (continuous) or of the tick chain's keeper (tick). Default 20 s. */
  rateMs?: number;
  /** Timeout of the scheduled functions. Default 45 s. */
  timeoutMs?: number;
  podSyncConcurrency?: PodSyncConcurrency;
  /**
   * Bus retries of a failed pod-sync delivery (EventBridge plus Lambda's async retries). Default 5, 1 s
   * apart; `deployed` retries as serverless.yml deploys them (two retries, one and two minutes apart).
   */
  syncRetries?: number | 'deployed';
  /** `host-process` (default) lets {@link PipelineHarness.killFunctions} SIGKILL the functions. */
  sandboxes?: 'host-process' | 'in-process';
  /** Node arguments and environment variables of the host process (`host-process` only): a test's `--import`. */
  hostProcess?: LocalDeploymentOptions['hostProcess'];
  /** How long to wait for every node Ready and schedulable. Default 90 s. */
  readyTimeoutMs?: number;
  /** The scheduled functions to start; default all four (a test may leave pod-status out, say). */
  scheduled?: readonly string[];
  /** Called once per finished invocation, besides the harness's own {@link PipelineHarness.invocations} tally. */
  onResult?: LocalDeploymentOptions['onResult'];
}

interface HarnessParts {
  provider: ProviderSetup;
  nodes: readonly string[];
  tableName: string;
  table: StateTable;
  env: Readonly<Record<string, string>>;
  deployment: LocalDeployment;
  probe: ProviderProbe;
  adminKubeconfig: string;
  invocations: InvocationTally;
}

const ADMIN_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Periods shortened so that scenarios converge in seconds: locks taken over
 * after 6 s, claims after 10 s, the dangling pass and the reconciler every
 * 10 s, statuses polled every 2 s.
 */
export const HARNESS_FUNCTION_ENV: Readonly<Record<string, string>> = {
  SVK_LOCK_TTL_SECONDS: '6',
  SVK_LOCK_POLL_MS: '500',
  SVK_POD_CLAIM_SECONDS: '10',
  SVK_POD_STATUS_INTERVAL_SECONDS: '2',
  SVK_POD_DANGLING_INTERVAL_SECONDS: '10',
  SVK_RECONCILE_INTERVAL_SECONDS: '10',
  SVK_RECONCILE_RESYNC_GRACE_SECONDS: '10',
  SVK_RECONCILE_LEADER_WAIT_MS: '1000',
};

/**
 * The real pipeline for one provider: a fresh DynamoDB table, the whole
 * deployment (heartbeat, pod-watch, pod-sync behind the event bus,
 * pod-status, reconcile) in the local Lambda runtime with its sandboxes in a
 * killable process, virtual nodes registered on the real control plane, and
 * the provider's probe. Scenarios create objects through {@link pods} in
 * namespaces the harness removes again.
 *
 * Used by the conformance suite (`test/conformance/`) and by benchmarks
 * (`bench/`), which pass their own {@link HarnessEnvironment}.
 */
export class PipelineHarness {
  readonly admin: ToolingClients;
  readonly apps: AppsV1Api;
  readonly batch: BatchV1Api;
  readonly pods: HarnessPods;
  readonly #namespaces: string[] = [];
  #stopped: Promise<void> | undefined;

  readonly provider: ProviderSetup;
  readonly nodes: readonly string[];
  readonly tableName: string;
  readonly table: StateTable;
  /** The functions' environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly deployment: LocalDeployment;
  readonly probe: ProviderProbe;
  /** How the deployment's invocations ended, per function. */
  readonly invocations: InvocationTally;

  private constructor(parts: HarnessParts) {
    this.invocations = parts.invocations;
    this.provider = parts.provider;
    this.nodes = parts.nodes;
    this.tableName = parts.tableName;
    this.table = parts.table;
    this.env = parts.env;
    this.deployment = parts.deployment;
    this.probe = parts.probe;
    // Setup and assertions must outlast a slow API server on a loaded machine: 30 s, not the functions' 5 s.
    this.admin = createToolingClients(parts.adminKubeconfig, { requestTimeoutMs: ADMIN_REQUEST_TIMEOUT_MS });
    this.apps = this.admin.config.makeApiClient(AppsV1Api);
    this.batch = this.admin.config.makeApiClient(BatchV1Api);
    this.pods = new HarnessPods(this.admin, this.batch, this.apps, this.node, this.provider.image);
  }

  /** The first node: where scenarios put their pods unless they say otherwise. */
  get node(): string {
    return this.nodes[0] ?? '';
  }

  /**
   * Creates the table, starts the provider and the deployment, and waits
   * until every node is Ready without the not-ready taint.
   */
  static async start(options: PipelineHarnessOptions): Promise<PipelineHarness> {
    const { environment, provider } = options;
    const nodes = Array.from({ length: options.nodeCount ?? 1 }, () =>
      uniqueName(options.nodePrefix ?? `conf-${provider.name}`),
    );
    const tableName = uniqueName('svk-harness');
    const { client, doc } = createDynamoDbClient({
      endpoint: environment.dynamodb.endpoint,
      region: environment.dynamodb.region,
    });
    await createTable(client, tableName);
    const table = new StateTable(doc, tableName);
    await provider.start?.();
    const env: Record<string, string> = {
      SVK_KUBECONFIG: environment.kube.kubeletKubeconfig,
      ...(environment.kube.podApiServer ? { SVK_POD_API_SERVER: environment.kube.podApiServer } : {}),
      SVK_DYNAMODB_ENDPOINT: environment.dynamodb.endpoint,
      AWS_REGION: environment.dynamodb.region,
      SVK_TABLE_NAME: tableName,
      SVK_LOG_LEVEL: process.env.SVK_TEST_LOG_LEVEL ?? 'warn',
      SVK_NODE_NAMES: nodes.join(','),
      SVK_PROVIDER: provider.name,
      ...HARNESS_FUNCTION_ENV,
      ...provider.env?.(nodes),
      ...options.env,
    };
    const invocations = new InvocationTally();
    const deployment = new LocalDeployment({
      env,
      ...(environment.kube.functionKubeconfigs && !options.env?.SVK_KUBECONFIG
        ? { kubeconfigs: environment.kube.functionKubeconfigs }
        : {}),
      ...(options.cadence ? { cadence: options.cadence } : {}),
      rateMs: options.rateMs ?? 20_000,
      timeoutMs: options.timeoutMs ?? 45_000,
      ...(options.syncRetries === 'deployed'
        ? { retryPolicy: 'deployed' as const }
        : { syncRetries: options.syncRetries ?? 5, syncRetryDelayMs: 1_000 }),
      sandboxes: options.sandboxes ?? 'host-process',
      ...(options.hostProcess ? { hostProcess: options.hostProcess } : {}),
      ...(options.podSyncConcurrency !== undefined ? { podSyncConcurrency: options.podSyncConcurrency } : {}),
      onResult: (invocation, result) => {
        invocations.record(invocation, result);
        options.onResult?.(invocation, result);
      },
    });
    provider.connect?.(deployment);
    const probe = provider.probe({ table, env });
    const harness = new PipelineHarness({
      provider,
      nodes,
      tableName,
      table,
      env,
      deployment,
      probe,
      adminKubeconfig: environment.kube.adminKubeconfig,
      invocations,
    });
    deployment.start(options.scheduled);
    try {
      await harness.#waitReady(options.readyTimeoutMs ?? 90_000);
    } catch (err) {
      await harness.stop();
      throw err;
    }
    return harness;
  }

  /** A new namespace (ready for pods), deleted by {@link stop}. */
  async namespace(prefix: string): Promise<string> {
    const name = uniqueName(prefix);
    this.#namespaces.push(name);
    await createTestNamespace(this.admin, name);
    return name;
  }

  /**
   * SIGKILLs every function's sandbox at once. Invocations in flight die;
   * the bus retries the pod events they held, schedules keep firing, and
   * the next invocation cold-starts a new sandbox process.
   */
  killFunctions(): Promise<void> {
    return this.deployment.killFunctions();
  }

  /**
   * Deletes the harness's namespaces through the pipeline and waits (up to
   * `drainTimeoutMs`) until the provider holds nothing of them, so the
   * provider's own resources are removed the way users remove them; then
   * stops the deployment and the provider, and removes the nodes. Whatever
   * the provider still holds after the wait is purged. Idempotent.
   */
  stop(options: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.#stopped ??= this.#stop(options.drainTimeoutMs ?? 60_000);
    return this.#stopped;
  }

  async #stop(drainTimeoutMs: number): Promise<void> {
    const errors: unknown[] = [];
    const step = async (what: () => Promise<unknown> | undefined) => {
      try {
        await what();
      } catch (err) {
        errors.push(err);
      }
    };
    await step(() => Promise.all(this.#namespaces.map((ns) => deleteTestNamespace(this.admin, ns))));
    const drained = await this.#drain(drainTimeoutMs).then(
      () => true,
      () => false,
    );
    await step(() => this.deployment.stop({ abortRunning: true }));
    if (!drained) await step(() => this.probe.purge?.(this.nodes));
    await step(() => this.probe.close?.());
    await step(() => this.provider.stop?.());
    await step(() => Promise.all(this.nodes.map((n) => deleteNodeAndLease(this.admin, n))));
    // Every step ran, so nothing is left open; the first failure is still reported.
    if (errors.length > 0) throw errors[0];
  }

  async #drain(timeoutMs: number): Promise<void> {
    await waitFor(
      async () => {
        for (const node of this.nodes) if ((await this.probe.pods(node)).length > 0) return false;
        return true;
      },
      { timeoutMs, intervalMs: 1_000, what: 'the provider to hold no pod of the harness nodes' },
    );
  }

  async #waitReady(timeoutMs: number): Promise<void> {
    await Promise.all(
      this.nodes.map((node) =>
        waitFor(
          async () => {
            const n = await readNode(this.admin, node);
            const notReady = n?.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready');
            return readyStatus(n) === 'True' && !notReady;
          },
          { timeoutMs, intervalMs: 500, what: `node ${node} Ready and schedulable` },
        ),
      ),
    );
  }
}
