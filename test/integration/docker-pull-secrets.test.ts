import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { createDockerProviders } from '../../lib/provider/docker/factory.ts';
import { parseDockerSettings } from '../../lib/provider/docker/settings.ts';
import type { PodProvider } from '../../lib/provider/provider.ts';
import { containerStatus, testEngine } from '../support/docker.ts';
import { uniqueName, waitFor } from '../support/kube.ts';
import { PodPipeline } from '../support/pod-pipeline.ts';
import { dockerConfigSecret, pushToTestRegistry } from '../support/registry.ts';

/**
 * imagePullSecrets end to end: the run's registry (Debian's docker-registry,
 * basic auth, plain HTTP on 127.0.0.1) holds images the engine has never
 * seen; pods name `kubernetes.io/dockerconfigjson` Secrets in the real API
 * server; the Docker provider, built by its factory as a deployment builds
 * it, reads them with the kubelet's identity and hands the credentials to
 * Podman's pull, under pod-sync's reconciler and pod-status's syncer.
 */
const namespace = uniqueName('pull-secrets');
const node = uniqueName('vk-pull');
const log = createLogger({ level: process.env.SVK_TEST_LOG_LEVEL ?? 'warn' });
/**
 * The registry's refusal as the engine reports it: Podman passes on the
 * registry's `unauthorized: authentication required`; Docker Engine, sent no
 * credentials, says `no basic auth credentials` before it asks.
 */
const REFUSED = /unauthorized|authentication required|no basic auth credentials/i;
let provider: PodProvider;
const pipeline = new PodPipeline({
  namespace,
  node,
  provider: () => provider,
  log,
  owner: 'docker-pull-secrets-test',
});
const { env, admin, kubelet } = pipeline;
const docker = testEngine(env);
const reconciler = () => pipeline.reconciler();
const syncer = () => pipeline.syncer();
const readPod = (name: string) => pipeline.readPod(name);

before(async () => {
  const settings = parseDockerSettings({
    SVK_DOCKER_HOST: env.docker.host,
    SVK_DOCKER_NETWORK: env.docker.network,
  });
  if (!settings.ok) throw new Error(JSON.stringify(settings.issues));
  ({ podProvider: provider } = await createDockerProviders(settings.settings, {
    config: {
      node: { capacity: { cpu: '4', memory: '8Gi', pods: '20' }, operatingSystem: 'linux' },
      pods: { maxParallel: 4 },
    },
    clock: systemClock,
    log,
    region: 'local',
    kubeletVersion: 'v1.20.2-svk',
    kube: kubelet,
  }));
  await pipeline.setUp();
  const { address, username, password } = env.registry;
  await admin.core.createNamespacedSecret({
    namespace,
    body: dockerConfigSecret(namespace, 'regcred', address, { username, password }),
  });
  await admin.core.createNamespacedSecret({
    namespace,
    body: dockerConfigSecret(namespace, 'wrongcred', address, { username, password: `${password}-wrong` }),
  });
});

after(() => pipeline.tearDown());

/** A pod running `sleep` from `image`, pulled on every start, with these pull secrets. */
async function createPod(name: string, image: string, pullSecrets: string[]): Promise<V1Pod> {
  const pod = await admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        nodeName: node,
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 0,
        imagePullSecrets: pullSecrets.map((s) => ({ name: s })),
        containers: [{ name: 'main', image, imagePullPolicy: 'Always', command: ['sleep', '3600'] }],
      },
    },
  });
  await reconciler().reconcile(namespace, name);
  return pod;
}

/**
 * Status rounds (pod-status's poll) until every named pod in the API server
 * satisfies its condition; returns them, and what each showed on the way
 * (its container's waiting reasons, `Running` once it ran).
 */
async function untilStored(
  want: Record<string, (pod: V1Pod) => boolean>,
  what: string,
): Promise<{ pods: Record<string, V1Pod>; seen: Record<string, Set<string>> }> {
  const seen: Record<string, Set<string>> = Object.fromEntries(
    Object.keys(want).map((name) => [name, new Set<string>()]),
  );
  const pods = await waitFor(
    async () => {
      await syncer().syncNode(node);
      const got: Record<string, V1Pod> = {};
      const pending: string[] = [];
      for (const [name, done] of Object.entries(want)) {
        const pod = await readPod(name);
        const state = pod && containerStatus(pod, 'main')?.state;
        const shown = state?.running ? 'Running' : state?.waiting?.reason;
        if (shown) seen[name]?.add(shown);
        if (pod && done(pod)) got[name] = pod;
        else pending.push(`${name} ${shown ?? pod?.status?.phase ?? 'absent'}`);
      }
      // Thrown, so that a timeout says how the pods that were not there yet stood.
      if (pending.length > 0) throw new Error(`not yet: ${pending.join(', ')}`);
      return got;
    },
    { timeoutMs: 60_000, intervalMs: 300, what },
  );
  return { pods, seen };
}

const running = (pod: V1Pod) =>
  pod.status?.phase === 'Running' && !!containerStatus(pod, 'main')?.state?.running;
const waitingFor = (reason: string) => (pod: V1Pod) =>
  containerStatus(pod, 'main')?.state?.waiting?.reason === reason;

async function onEngine(image: string): Promise<boolean> {
  return docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      (err: { statusCode?: number }) => {
        if (err.statusCode === 404) return false;
        throw err;
      },
    );
}

describe('docker provider: imagePullSecrets against a registry with basic auth', () => {
  it('runs a pod whose image is only in the registry, pulled with its imagePullSecret', async () => {
    const image = await pushToTestRegistry(`${namespace}/only-remote:1.0`);
    assert.equal(await onEngine(image), false, 'not on the engine before the pod pulls it');
    await createPod('authorized', image, ['regcred']);
    const { pods } = await untilStored({ authorized: running }, 'authorized Running in the API server');
    const status = containerStatus(pods.authorized ?? {}, 'main');
    assert.equal(status?.image, image);
    assert.equal(await onEngine(image), true, 'pulled onto the engine');
  });

  it('shows ErrImagePull, then ImagePullBackOff, with the registry refusal, without a pull secret or with wrong credentials', async () => {
    const image = await pushToTestRegistry(`${namespace}/refused:1.0`);
    await createPod('anonymous', image, []);
    await createPod('wrong', image, ['wrongcred']);
    await createPod('missing', image, ['no-such-secret']);
    const pulling = await untilStored(
      {
        anonymous: waitingFor('ErrImagePull'),
        wrong: waitingFor('ErrImagePull'),
        missing: waitingFor('ErrImagePull'),
      },
      'ErrImagePull in the API server',
    );
    for (const [name, pod] of Object.entries(pulling.pods)) {
      const message = containerStatus(pod, 'main')?.state?.waiting?.message ?? '';
      assert.match(message, REFUSED, `${name}: the registry's refusal`);
      assert.ok(message.includes(image), `${name}: names the image: ${message}`);
      assert.equal(pod.status?.phase, 'Pending');
    }
    const backOff = await untilStored(
      {
        anonymous: waitingFor('ImagePullBackOff'),
        wrong: waitingFor('ImagePullBackOff'),
        missing: waitingFor('ImagePullBackOff'),
      },
      'ImagePullBackOff in the API server',
    );
    for (const [name, pod] of Object.entries(backOff.pods))
      assert.equal(
        containerStatus(pod, 'main')?.state?.waiting?.message,
        `Back-off pulling image "${image}"`,
        name,
      );
    assert.equal(await onEngine(image), false, 'nothing was pulled');
  });

  it('does not run a pod without credentials from the pull of a pod with them (imagePullPolicy Always)', async () => {
    const image = await pushToTestRegistry(`${namespace}/shared-after:1.0`);
    // The pod with credentials starts its pull first; the other comes while it is under way.
    await createPod('first-authorized', image, ['regcred']);
    await createPod('then-anonymous', image, []);
    const { pods, seen } = await untilStored(
      { 'first-authorized': running, 'then-anonymous': waitingFor('ErrImagePull') },
      'the authorized pod Running, the anonymous one refused',
    );
    assert.match(
      containerStatus(pods['then-anonymous'] ?? {}, 'main')?.state?.waiting?.message ?? '',
      REFUSED,
    );
    assert.ok(!seen['then-anonymous']?.has('Running'), 'never ran the image it may not pull');
  });

  it('does not hold back a pod with credentials behind the failed pull of a pod without them', async () => {
    const image = await pushToTestRegistry(`${namespace}/shared-before:1.0`);
    // The pull without credentials starts first, and fails.
    await createPod('first-anonymous', image, []);
    await createPod('then-authorized', image, ['regcred']);
    const { seen } = await untilStored(
      { 'then-authorized': running, 'first-anonymous': waitingFor('ErrImagePull') },
      'the authorized pod Running, the anonymous one refused',
    );
    assert.deepEqual(
      [...(seen['then-authorized'] ?? [])].filter((shown) => /ErrImage|ImagePull/.test(shown)),
      [],
      'the authorized pod waited for nothing but its own pull',
    );
  });
});
