import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createLogger } from '../../lib/log/logger.ts';
import {
  containerStatus,
  engineContainers,
  readAll,
  TEST_IMAGE,
  testDockerProvider,
  testEngine,
} from '../support/docker.ts';
import { uniqueName, waitFor } from '../support/kube.ts';
import { PodPipeline } from '../support/pod-pipeline.ts';

/**
 * The Docker provider under pod-sync's reconciler and pod-status's syncer,
 * with the kubelet's identity against the real API server: the statuses it
 * reports are the ones the API server stores and `kubectl` shows. (The whole
 * deployment, schedules and bus included, is the conformance suite's.)
 */
const namespace = uniqueName('docker-pipe');
const node = uniqueName('vk-docker');
const log = createLogger({ level: process.env.SVK_TEST_LOG_LEVEL ?? 'warn' });
const provider = testDockerProvider();
const pipeline = new PodPipeline({
  namespace,
  node,
  provider: () => provider,
  log,
  owner: 'docker-pipeline-test',
});
const { admin } = pipeline;
const reconciler = () => pipeline.reconciler();
const syncer = () => pipeline.syncer();
const readPod = (name: string) => pipeline.readPod(name);

before(() => pipeline.setUp());
after(() => pipeline.tearDown());

async function createPod(
  name: string,
  script: string,
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
): Promise<V1Pod> {
  return admin.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 30,
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', script] }],
        ...spec,
      },
    },
  });
}

/** Status rounds (pod-status's poll) until the API server's pod satisfies `done`. */
function untilStored(name: string, done: (pod: V1Pod) => boolean, what: string): Promise<V1Pod> {
  return waitFor(
    async () => {
      await syncer().syncNode(node);
      const pod = await readPod(name);
      return pod && done(pod) ? pod : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 300, what },
  );
}

describe('docker provider through pod-sync and pod-status', () => {
  it('stores Succeeded with exit code 0, and Failed with exit code 3, for restartPolicy Never', async () => {
    await createPod('zero', 'exit 0');
    await createPod('three', 'exit 3');
    assert.equal((await reconciler().reconcile(namespace, 'zero')).outcome, 'created');
    assert.equal((await reconciler().reconcile(namespace, 'three')).outcome, 'created');
    const zero = await untilStored(
      'zero',
      (p) => p.status?.phase === 'Succeeded',
      'zero Succeeded in the API server',
    );
    assert.equal(containerStatus(zero, 'main')?.state?.terminated?.exitCode, 0);
    const three = await untilStored(
      'three',
      (p) => p.status?.phase === 'Failed',
      'three Failed in the API server',
    );
    assert.equal(containerStatus(three, 'main')?.state?.terminated?.exitCode, 3);
    assert.match(three.status?.podIP ?? '', /^10\./);
    assert.equal(three.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status, 'True');
  });

  it('stores CrashLoopBackOff and a growing restartCount for a crash-looping container', async () => {
    await createPod('crash', 'exit 1', { restartPolicy: 'Always' });
    await reconciler().reconcile(namespace, 'crash');
    const looping = await untilStored(
      'crash',
      (p) => containerStatus(p, 'main')?.state?.waiting?.reason === 'CrashLoopBackOff',
      'CrashLoopBackOff in the API server',
    );
    assert.ok((containerStatus(looping, 'main')?.restartCount ?? 0) >= 1);
    assert.equal(containerStatus(looping, 'main')?.lastState?.terminated?.exitCode, 1);
    assert.equal(looping.status?.phase, 'Running');
  });

  it('reports a pod it cannot run once, with a Warning event naming the field, and creates nothing', async () => {
    const pod = await createPod('hostnet', 'true', { restartPolicy: 'Always', hostNetwork: true });
    const result = await reconciler().reconcile(namespace, 'hostnet');
    assert.equal(result.outcome, 'create-failed', 'not retried: the same spec fails the same way');
    const stored = await readPod('hostnet');
    assert.equal(stored?.status?.reason, 'ProviderFailed');
    assert.match(stored?.status?.message ?? '', /spec\.hostNetwork/);
    const events = await admin.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
    });
    assert.ok(
      events.items.some(
        (e) =>
          e.type === 'Warning' && e.reason === 'ProviderCreateFailed' && /hostNetwork/.test(e.message ?? ''),
      ),
    );
    assert.deepEqual(await engineContainers(testEngine(), pod.metadata?.uid ?? ''), []);
  });

  it('refuses what the API server keeps of confinement the engine does not apply, naming every field in one event', async () => {
    const body: V1Pod = {
      metadata: {
        name: 'confined',
        namespace,
        // Kubernetes 1.20 asks for AppArmor by annotation only.
        annotations: { 'container.apparmor.security.beta.kubernetes.io/main': 'localhost/tight' },
      },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        securityContext: { seccompProfile: { type: 'Unconfined' }, runAsGroup: 2000 },
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'true'] }],
      },
    };
    const pod = await admin.core.createNamespacedPod({ namespace, body });
    const result = await reconciler().reconcile(namespace, 'confined');
    assert.equal(result.outcome, 'create-failed');
    const fields = [
      'metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]',
      'spec.securityContext.seccompProfile',
      'spec.containers[main].securityContext.runAsGroup',
    ];
    const events = await admin.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
    });
    const warning = events.items.find((e) => e.type === 'Warning' && e.reason === 'ProviderCreateFailed');
    for (const field of fields)
      assert.ok(warning?.message?.includes(`${field}:`), `${field} in ${warning?.message}`);
    assert.deepEqual(await engineContainers(testEngine(), pod.metadata?.uid ?? ''), []);
  });

  it("runs a StatefulSet's pod (hostname, subdomain, setHostnameAsFQDN): its hostname is its FQDN in the cluster domain", async () => {
    const pod = await createPod('db-0', 'hostname; hostname -f', {
      hostname: 'db-0',
      subdomain: 'db',
      setHostnameAsFQDN: true,
    });
    assert.equal((await reconciler().reconcile(namespace, 'db-0')).outcome, 'created');
    await untilStored('db-0', (p) => p.status?.phase === 'Succeeded', 'db-0 Succeeded');
    const fqdn = `db-0.db.${namespace}.svc.cluster.local`;
    assert.equal(await readAll(await provider.containerLogs(pod, 'main', {})), `${fqdn}\n${fqdn}\n`);
  });

  it('refuses a pod whose FQDN is too long to be its hostname under setHostnameAsFQDN, as the kubelet does, naming the field', async () => {
    const subdomain = 'a-headless-service-with-a-name-this-long';
    const pod = await createPod('replica-0', 'hostname', { subdomain, setHostnameAsFQDN: true });
    const result = await reconciler().reconcile(namespace, 'replica-0');
    assert.equal(result.outcome, 'create-failed');
    const events = await admin.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
    });
    const warning = events.items.find((e) => e.type === 'Warning' && e.reason === 'ProviderCreateFailed');
    const fqdn = `replica-0.${subdomain}.${namespace}.svc.cluster.local`;
    assert.ok(
      warning?.message?.includes(`spec.setHostnameAsFQDN: the FQDN ${fqdn} is ${fqdn.length} characters`),
      String(warning?.message),
    );
    assert.deepEqual(await engineContainers(testEngine(), pod.metadata?.uid ?? ''), []);
  });

  it('deletes gracefully: SIGTERM, and the pod leaves the API server once its container exited, before its grace period ends', async () => {
    const pod = await createPod('graceful', "trap 'exit 0' TERM; while true; do sleep 0.1; done", {
      restartPolicy: 'Always',
    });
    await reconciler().reconcile(namespace, 'graceful');
    await untilStored('graceful', (p) => p.status?.phase === 'Running', 'graceful Running');
    const deletedAt = Date.now();
    await admin.core.deleteNamespacedPod({ namespace, name: 'graceful', gracePeriodSeconds: 30 });
    assert.equal((await reconciler().reconcile(namespace, 'graceful')).outcome, 'deleted-in-provider');
    await waitFor(
      async () => {
        await syncer().syncNode(node);
        await reconciler().reconcile(namespace, 'graceful');
        return (await readPod('graceful')) === undefined;
      },
      { timeoutMs: 25_000, intervalMs: 300, what: 'the pod gone from the API server' },
    );
    assert.ok(Date.now() - deletedAt < 30_000, 'gone before its 30 s grace period ended');
    assert.deepEqual(await engineContainers(testEngine(), pod.metadata?.uid ?? ''), []);
  });
});
