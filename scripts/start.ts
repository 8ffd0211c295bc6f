/**
 * `npm start`: the virtual kubelet on its local defaults, every function on
 * its schedule in one process through the local Lambda runtime.
 *
 * - Cluster: the current kubeconfig (KUBECONFIG, else ~/.kube/config) when its
 *   API server answers; otherwise the project's local control plane, built on
 *   first use (scripts/ensure-kube.sh, progress shown). The functions use
 *   SVK_KUBECONFIG when set, else that same kubeconfig; with the local
 *   control plane, each function its own user (serverless-virtual-kubelet:<function>,
 *   bound to that function's roles in infra/rbac.yaml, as on EKS), so a call
 *   a function's role lacks fails with 403 in its log.
 * - DynamoDB: SVK_DYNAMODB_ENDPOINT when set; otherwise DynamoDB Local with
 *   its data in .local/start/dynamodb, so a restart resumes. The table
 *   (SVK_TABLE_NAME) is created when missing.
 * - Provider: SVK_PROVIDER when set; otherwise `docker` when a
 *   Docker-compatible engine answers (SVK_DOCKER_HOST, DOCKER_HOST, else the
 *   default socket), else `mock`. The first lines say which, and why.
 * - Logs: the functions' JSON lines, one readable line each (lib/log/pretty.ts).
 *   For that this script runs twice: the supervisor formats the stdout of the
 *   runner (`--run`), which does the work.
 * - Kubelet API: the kubelet-api function behind a local HTTPS front, so
 *   `kubectl logs`, the node proxy and metrics work (lib/local/local-kubelet-api.ts).
 *   With the local control plane each node is at its own 127.x address; with
 *   a cluster it joined, on an address that cluster's API server can reach
 *   (SVK_LOCAL_KUBELET_API_ADDRESS overrides), with a serving certificate from
 *   the cluster's kubelet-serving signer (lib/local/kubelet-api/).
 * - pod-sync runs at most SVK_LOCAL_POD_SYNC_CONCURRENCY invocations at once
 *   (10, serverless.yml's podSyncConcurrency); further pod events wait.
 * - Ctrl-C (or SIGTERM): the schedules stop, running invocations end as if
 *   their sandboxes died (every write is conditional or fenced, so state stays
 *   consistent; locks they held are taken over after SVK_LOCK_TTL_SECONDS),
 *   then DynamoDB Local and the control plane stop, and both processes exit 0.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../lib/config/config.ts';
import { loadConfig } from '../lib/config/load-config.ts';
import { isApiServerReachable } from '../lib/kube/client.ts';
import { contextFromKubeConfig, type KubeContext } from '../lib/kube/kube-context.ts';
import { defaultKubeConfig } from '../lib/kube/kubeconfig.ts';
import { type Cadence, cadenceFromEnv } from '../lib/local/cadence.ts';
import { controlPlaneBinariesPresent } from '../lib/local/control-plane/binaries.ts';
import { CertificateAuthority, type CertificateFiles } from '../lib/local/control-plane/pki.ts';
import { startControlPlane } from '../lib/local/control-plane.ts';
import type { FunctionKubeconfigs } from '../lib/local/deployment-handlers.ts';
import { localProvider } from '../lib/local/docker-engine.ts';
import { startDynamoDbLocal } from '../lib/local/dynamodb-local.ts';
import { bridgeGateway } from '../lib/local/engine-gateway.ts';
import {
  type JoinedKubeletApiSettings,
  joinedKubeletApiSettingsFromEnv,
  startJoinedKubeletApi,
} from '../lib/local/kubelet-api/joined-cluster.ts';
import {
  LocalDeployment,
  type PodSyncConcurrency,
  podSyncConcurrencyFromEnv,
} from '../lib/local/local-deployment.ts';
import { startLocalKubeletApi } from '../lib/local/local-kubelet-api.ts';
import { formatLogLine } from '../lib/log/pretty.ts';
import { parseDockerSettings } from '../lib/provider/docker/settings.ts';
import { createDynamoDbClient } from '../lib/state/dynamodb-clients.ts';
import { createTable } from '../lib/state/table-definition.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = join(root, '.local', 'start');

function say(line: string): void {
  process.stderr.write(`[start] ${line}\n`);
}

function message(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/** Formats the runner's log lines and passes signals on; exits with the runner's code. */
function supervise(): void {
  const runner = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--run'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: runner.stdout });
  lines.on('line', (line) => process.stdout.write(`${formatLogLine(line)}\n`));
  // A terminal's Ctrl-C reaches the runner too (same process group); a signal sent to this pid alone must be passed on.
  const forward = (signal: NodeJS.Signals) => () => {
    if (runner.exitCode === null) runner.kill(signal);
  };
  process.on('SIGINT', forward('SIGINT'));
  process.on('SIGTERM', forward('SIGTERM'));
  const drained = new Promise((resolve) => lines.once('close', resolve));
  runner.on('exit', (code, signal) => {
    void drained.then(() => process.exit(code ?? (signal ? 1 : 0)));
  });
}

/** The kubeconfig the user's tools use, as one file path; undefined when there is none or its server does not answer. */
async function currentKubeconfig(): Promise<string | undefined> {
  const kubeconfigEnv = process.env.KUBECONFIG;
  const paths = kubeconfigEnv
    ? kubeconfigEnv.split(delimiter).filter(Boolean)
    : [join(homedir(), '.kube', 'config')];
  let config: KubeConfig;
  let kc: KubeContext;
  try {
    config = await defaultKubeConfig();
    kc = contextFromKubeConfig(config);
  } catch {
    return undefined;
  }
  const server = kc.server;
  if (!(await isApiServerReachable(kc))) {
    say(`current kubeconfig's API server ${server || '(none)'} does not answer`);
    return undefined;
  }
  say(`using the current kubeconfig: context ${kc.name}, ${server}`);
  if (paths.length === 1 && paths[0]) return paths[0];
  // Several files in KUBECONFIG: hand the functions the merged view, as kubectl sees it (JSON is YAML).
  mkdirSync(dir, { recursive: true });
  const merged = join(dir, 'current.kubeconfig');
  writeFileSync(merged, config.exportConfig(), { mode: 0o600 });
  return merged;
}

/** What the runner started, to be stopped in reverse order. */
type Stops = Array<() => Promise<void>>;

async function run(): Promise<void> {
  const stops: Stops = [];
  let stopping: Promise<never> | undefined;
  let quiet = false;
  // A terminal's Ctrl-C arrives twice (directly and forwarded by the supervisor): the second waits for the first.
  const shutdown = (code: number): Promise<never> => {
    quiet = true;
    stopping ??= (async () => {
      say('stopping…');
      for (const stop of stops.reverse())
        await stop().catch((err: unknown) => say(`stop failed: ${message(err)}`));
      say('stopped');
      process.exit(code);
    })();
    return stopping;
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    // Real containers when a Docker-compatible engine answers, else the mock.
    if (!process.env.SVK_PROVIDER) {
      const chosen = await localProvider(process.env);
      process.env.SVK_PROVIDER = chosen.provider;
      say(`provider ${chosen.provider}: ${chosen.reason}`);
    } else say(`provider ${process.env.SVK_PROVIDER} (SVK_PROVIDER)`);
    // Refuse a bad configuration before starting anything.
    const config = loadConfig(process.env);
    const podSyncConcurrency = podSyncConcurrencyFromEnv(process.env);
    const cadence = cadenceFromEnv(process.env);
    const kubeletApi = joinedKubeletApiSettingsFromEnv(process.env);
    mkdirSync(dir, { recursive: true });
    const cluster = await useCluster(stops);
    if (stopping) return;
    const endpoint = await useDynamoDb(config, stops);
    if (stopping) return;
    const kubeconfig = process.env.SVK_KUBECONFIG || cluster.kubeconfig;
    const env: Record<string, string | undefined> = {
      ...process.env,
      SVK_KUBECONFIG: kubeconfig,
      SVK_DYNAMODB_ENDPOINT: endpoint,
      AWS_REGION: config.dynamodb.region,
    };
    if (!config.kubeletApi.endpoint) await useKubeletApi(config, cluster, kubeletApi, env, stops);
    const deployment = new LocalDeployment({
      env,
      // The local control plane's user per function, unless SVK_KUBECONFIG chose one for every function.
      ...(cluster.functionKubeconfigs && !process.env.SVK_KUBECONFIG
        ? { kubeconfigs: cluster.functionKubeconfigs }
        : {}),
      podSyncConcurrency,
      cadence,
      // pod-sync runs once per pod event, a tick every few seconds: only their failures are worth a line.
      onResult: (invocation, result) => {
        // At Ctrl-C every running invocation ends as crashed: expected, not news.
        if (quiet) return;
        if (!['pod-sync', 'tick'].includes(invocation.functionName) || result.status !== 'ok') {
          say(`${invocation.functionName} ${invocation.requestId.slice(0, 8)} ended: ${result.status}`);
        }
      },
    });
    stops.push(() => deployment.stop({ abortRunning: true }));
    deployment.start();
    sayHowToUse({
      config,
      cadence,
      podSyncConcurrency,
      endpoint,
      kubeconfig,
      kubectlConfig: cluster.kubectlConfig,
    });
  } catch (err) {
    say(message(err));
    await shutdown(1);
  }
}

/**
 * The cluster to join: the current kubeconfig's when it answers, else the
 * local control plane (built first when its binaries are missing).
 * `kubeconfig` is for the functions, `kubectlConfig` for the user.
 */
async function useCluster(stops: Stops): Promise<{
  kubeconfig: string;
  kubectlConfig: string;
  kubeletApiKubeconfig?: string;
  functionKubeconfigs?: FunctionKubeconfigs;
  ca?: CertificateFiles;
}> {
  const current = await currentKubeconfig();
  if (current) return { kubeconfig: current, kubectlConfig: current };
  if (!controlPlaneBinariesPresent()) {
    say('building the local control plane (first run only, about 5 minutes on 2 cores)…');
    const built = spawnSync('bash', [join(root, 'scripts/ensure-kube.sh')], { stdio: ['ignore', 2, 2] });
    if (built.status !== 0) throw new Error('scripts/ensure-kube.sh failed');
  }
  say('starting the local control plane…');
  const gateway = await podGateway();
  const controlPlane = await startControlPlane({
    dir: join(dir, 'control-plane'),
    log: say,
    ...(gateway ? { podAddresses: [gateway] } : {}),
  });
  stops.push(() => controlPlane.stop());
  if (gateway && !process.env.SVK_POD_API_SERVER) {
    process.env.SVK_POD_API_SERVER = `${gateway}:${controlPlane.ports.apiServer}`;
    say(`pods reach the API server at ${process.env.SVK_POD_API_SERVER} (SVK_POD_API_SERVER)`);
  }
  return {
    kubeconfig: controlPlane.kubeletKubeconfig,
    kubectlConfig: controlPlane.adminKubeconfig,
    kubeletApiKubeconfig: controlPlane.kubeletApiKubeconfig,
    functionKubeconfigs: controlPlane.functionKubeconfigs,
    ca: controlPlane.ca,
  };
}

/**
 * With the docker provider on a local engine, the host's address on the pods'
 * network (its gateway), where the local control plane serves pods; undefined
 * otherwise, or when the engine does not tell.
 */
async function podGateway(): Promise<string | undefined> {
  if (process.env.SVK_PROVIDER !== 'docker') return undefined;
  const parsed = parseDockerSettings(process.env);
  if (!parsed.ok || parsed.settings.endpoint.kind !== 'unix') return undefined;
  try {
    return await bridgeGateway(parsed.settings.endpoint.socketPath, parsed.settings.network);
  } catch (err) {
    say(
      `pods will not reach the local API server: no gateway of ${parsed.settings.network} (${message(err)})`,
    );
    return undefined;
  }
}

/**
 * The kubelet API (`kubectl logs`, `kubectl top` through the node proxy).
 * For the local control plane on loopback, its serving certificate signed
 * by that cluster's CA; for a cluster joined, where its API server can reach
 * it (lib/local/kubelet-api/joined-cluster.ts). Sets
 * SVK_KUBELET_API_ADDRESSES, SVK_KUBELET_PORT, SVK_KUBELET_API_ID and
 * SVK_KUBELET_API_STAGE in `env`.
 */
async function useKubeletApi(
  config: Config,
  cluster: { kubectlConfig: string; kubeletApiKubeconfig?: string; ca?: CertificateFiles },
  settings: JoinedKubeletApiSettings,
  env: Record<string, string | undefined>,
  stops: Stops,
): Promise<void> {
  const apiDir = join(dir, 'kubelet-api');
  let api: { addresses: Record<string, string>; ports: Record<string, number>; stop(): Promise<void> };
  if (cluster.ca) {
    api = await startLocalKubeletApi({
      env,
      // The kubelet API's own identity (infra/rbac.yaml), unless SVK_KUBECONFIG chose one for every function.
      ...(cluster.kubeletApiKubeconfig && !process.env.SVK_KUBECONFIG
        ? { kubeconfig: cluster.kubeletApiKubeconfig }
        : {}),
      nodes: config.nodeNames,
      ca: CertificateAuthority.open(dirname(cluster.ca.cert)),
      dir: apiDir,
    });
  } else {
    const joined = await startJoinedKubeletApi({
      kubeconfig: cluster.kubectlConfig,
      env,
      nodes: config.nodeNames,
      settings,
      dir: apiDir,
      log: say,
    });
    if (!joined) return;
    api = joined.api;
  }
  stops.push(() => api.stop());
  const where = Object.entries(api.addresses).map(
    ([node, address]) => `${node} at ${address}:${api.ports[node] ?? ''}`,
  );
  say(`kubelet API (kubectl logs): ${where.join(', ')}`);
}

/** SVK_DYNAMODB_ENDPOINT, else DynamoDB Local with its data under .local/start; the table is created when missing. */
async function useDynamoDb(config: Config, stops: Stops): Promise<string> {
  let endpoint = config.dynamodb.endpoint;
  if (!endpoint) {
    const dynamo = await startDynamoDbLocal({
      dir: join(dir, 'dynamodb'),
      inMemory: false,
      log: () => undefined,
    });
    stops.push(() => dynamo.stop());
    endpoint = dynamo.endpoint;
    say(`DynamoDB Local: ${endpoint} (data in ${join(dir, 'dynamodb')})`);
  }
  const { client } = createDynamoDbClient({ endpoint, region: config.dynamodb.region });
  const { created } = await createTable(client, config.dynamodb.tableName);
  say(`table ${config.dynamodb.tableName} ${created ? 'created' : 'found: resuming'}`);
  return endpoint;
}

function sayHowToUse(running: {
  config: Config;
  cadence: Cadence;
  podSyncConcurrency: PodSyncConcurrency;
  endpoint: string;
  kubeconfig: string;
  kubectlConfig: string;
}): void {
  const { config, cadence, podSyncConcurrency, endpoint, kubeconfig, kubectlConfig } = running;
  const loops =
    cadence === 'tick'
      ? `a tick every ${config.node.leaseRenewIntervalMs / 1000} s (heartbeat, pod-watch, pod-status, reconcile)`
      : 'heartbeat, pod-watch, pod-status and reconcile every minute';
  say(
    `running ${loops} and pod-sync on pod events (at most ${podSyncConcurrency} at once), for node(s) ${config.nodeNames.join(', ')}`,
  );
  say(`try: kubectl --kubeconfig ${kubectlConfig} get nodes -o wide`);
  say(`     kubectl --kubeconfig ${kubectlConfig} apply -f examples/`);
  say(
    `     SVK_DYNAMODB_ENDPOINT=${endpoint} SVK_KUBECONFIG=${kubeconfig} SVK_TABLE_NAME=${config.dynamodb.tableName} SVK_NODE_NAMES=${config.nodeNames.join(',')} npm run status`,
  );
  say('Ctrl-C stops everything');
}

if (process.argv.includes('--run')) await run();
else supervise();
