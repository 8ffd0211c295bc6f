/**
 * pod-status on the Docker provider, woken by the engine's event stream:
 * one invocation whose interval (60 s) is longer than the invocation
 * itself, so that its first round is the only one polling gives it. A
 * container that exits after that round is reported in the same invocation
 * only because its `die` event woke a round. With the stream refused, the
 * same exit is reported by polling at a short interval.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { buildPodReconciler, type Dependencies, loadDependencies } from '../../lib/app/dependencies.ts';
import { systemClock } from '../../lib/clock.ts';
import { loadConfig } from '../../lib/config/load-config.ts';
import { isNotFound } from '../../lib/kube/client.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { kubeEnvSources } from '../../lib/pod/env/env-sources.ts';
import { KnownPodStore } from '../../lib/pod/known/known-pods.ts';
import {
  type PodStatusResult,
  type PodStatusRound,
  podStatus,
} from '../../lib/pod/status/pod-status-entry.ts';
import { KubePodEventRecorder } from '../../lib/pod/sync/pod-events.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import type { PodProvider } from '../../lib/provider/provider.ts';
import {
  containerStatus,
  engineContainers,
  TEST_IMAGE,
  testDockerProvider,
  testEngine,
  waitForPod,
} from '../support/docker.ts';
import { testEnv } from '../support/env.ts';
import {
  adminClients,
  createTestNamespace,
  deleteTestNamespace,
  freshTable,
  functionEnv,
  kubeletClients,
  uniqueName,
} from '../support/kube.ts';

const env = testEnv();
const admin = adminClients(env);
const kubelet = kubeletClients(env);
const namespace = uniqueName('docker-events');
const node = uniqueName('vk-events');
const log = createLogger({ level: process.env.SVK_TEST_LOG_LEVEL ?? 'warn' });
const provider = testDockerProvider();
/** The pod-status invocations: long enough for a round, a kill and a woken round on a loaded machine. */
const INVOCATION_MS = 12_000;
let tableName: string;
let knownPods: KnownPodStore;

before(async () => {
  await admin.core.createNode({ body: { metadata: { name: node } } });
  await createTestNamespace(admin, namespace);
  const fresh = await freshTable(env);
  tableName = fresh.name;
  knownPods = new KnownPodStore(fresh.table);
});

after(async () => {
  for (const pod of await provider.listPods(node)) await provider.deletePod(pod).catch(() => undefined);
  await deleteTestNamespace(admin, namespace);
  await admin.core.deleteNode({ name: node }).catch(() => undefined);
});

function dependencies(intervalSeconds: number): Promise<Dependencies> {
  return loadDependencies(
    loadConfig(
      functionEnv(tableName, {
        SVK_NODE_NAMES: node,
        SVK_PROVIDER: 'docker',
        SVK_DOCKER_HOST: env.docker.host,
        SVK_DOCKER_NETWORK: env.docker.network,
        SVK_POD_STATUS_INTERVAL_SECONDS: String(intervalSeconds),
        SVK_POD_STATUS_STOP_BEFORE_DEADLINE_MS: '1000',
        SVK_LOCK_POLL_MS: '250',
      }),
    ),
  );
}

/** One pod-status invocation of {@link INVOCATION_MS} in this process; `onRound` sees each round. */
function invokePodStatus(
  deps: Dependencies,
  onRound: (round: PodStatusRound) => void,
): Promise<PodStatusResult> {
  const invocation = {
    requestId: `test-${randomUUID().slice(0, 8)}`,
    functionName: 'pod-status',
    deadline: performance.now() + INVOCATION_MS,
    signal: AbortSignal.timeout(INVOCATION_MS),
  };
  return podStatus(deps, invocation, { onRound });
}

/** A Running pod, created through pod-sync, whose container exits 3 on SIGTERM. */
async function runningPod(name: string): Promise<V1Pod> {
  const pod = await admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: TEST_IMAGE,
            command: ['sh', '-c', "trap 'exit 3' TERM; while true; do sleep 0.1; done"],
          },
        ],
      },
    },
  });
  const reconciler = buildPodReconciler({
    core: kubelet.core,
    provider,
    knownPods,
    events: new KubePodEventRecorder({ core: kubelet.core, clock: systemClock, log }),
    envSources: kubeEnvSources(kubelet.core),
    nodes: [node],
    clock: systemClock,
    log,
    owner: 'docker-status-events-test',
    claimMs: 30_000,
    waitUntil: performance.now() + 30_000,
  });
  assert.equal((await reconciler.reconcile(namespace, name)).outcome, 'created');
  return waitForPod(provider, pod, (p) => p.status?.phase === 'Running', `${name} Running on the engine`);
}

/** SIGTERM to the pod's app container: it exits 3. */
async function stopContainer(pod: V1Pod): Promise<void> {
  const engine = testEngine(env);
  const [app] = (await engineContainers(engine, pod.metadata?.uid ?? '')).filter(
    (c) => c.Labels[LABELS.role] === 'app' && c.State === 'running',
  );
  assert.ok(app, 'the app container runs');
  await engine.getContainer(app.Id).kill({ signal: 'SIGTERM' });
}

async function readPod(name: string): Promise<V1Pod | undefined> {
  try {
    return await admin.core.readNamespacedPod({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Runs one invocation that stops the pod's container after its first round; what it did, and the pod after it. */
async function exitAfterFirstRound(
  deps: Dependencies,
  pod: V1Pod,
): Promise<{ result: PodStatusResult; phaseAfterFirstRound: string | undefined; stored: V1Pod | undefined }> {
  const name = pod.metadata?.name ?? '';
  let stopping: Promise<void> | undefined;
  let phaseAfterFirstRound: Promise<string | undefined> | undefined;
  const result = await invokePodStatus(deps, (round) => {
    if (round.round !== 1) return;
    phaseAfterFirstRound = readPod(name).then((p) => p?.status?.phase);
    stopping = stopContainer(pod);
  });
  await stopping;
  return { result, phaseAfterFirstRound: await phaseAfterFirstRound, stored: await readPod(name) };
}

describe('pod-status woken by the docker engine event stream', () => {
  it('reports a container that exited after the first round in the same invocation, at a 60 s interval', async () => {
    const pod = await runningPod('woken');
    const deps = await dependencies(60);
    const { result, phaseAfterFirstRound, stored } = await exitAfterFirstRound(deps, pod);
    assert.equal(result.role, 'holder');
    assert.equal(phaseAfterFirstRound, 'Running', 'the first round wrote Running');
    assert.equal(stored?.status?.phase, 'Failed', 'Failed written within the invocation');
    assert.equal(containerStatus(stored as V1Pod, 'main')?.state?.terminated?.exitCode, 3);
    assert.ok(result.rounds >= 2, `a second round ran (${result.rounds})`);
    assert.ok((result.woken ?? 0) >= 1, 'an engine event woke it');
    assert.equal(
      result.rounds,
      1 + (result.woken ?? 0),
      'every round after the first was woken, none polled',
    );
  });

  it('polls on when the event stream cannot be opened: the exit is reported at the interval', async () => {
    const pod = await runningPod('polled');
    const loaded = await dependencies(1);
    const deps = { ...loaded, podProvider: refusingChanges(loaded.podProvider) };
    const { result, stored } = await exitAfterFirstRound(deps, pod);
    assert.equal(result.role, 'holder');
    assert.equal(stored?.status?.phase, 'Failed');
    assert.equal(containerStatus(stored as V1Pod, 'main')?.state?.terminated?.exitCode, 3);
    assert.equal(result.woken, 0, 'no round was woken');
    assert.ok(result.rounds >= 2, `polled rounds ran (${result.rounds})`);
  });
});

/** The provider, with a change stream that cannot be opened (an engine refusing /events). */
function refusingChanges(inner: PodProvider): PodProvider {
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'watchChanges') {
        return () => {
          throw new Error('the engine refused /events');
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
