import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { LABELS } from '../../lib/provider/docker/names.ts';
import {
  containerStatus,
  engineContainers,
  shellPod,
  testDockerProvider,
  testEngine,
  waitForPod,
} from '../support/docker.ts';
import { uniqueName } from '../support/kube.ts';

describe('docker provider: restarts, images and graceful deletes on a real engine', () => {
  const provider = testDockerProvider();
  const docker = testEngine();
  const created: V1Pod[] = [];
  after(async () => {
    await Promise.all(created.map((p) => provider.deletePod(p).catch(() => undefined)));
  });

  it('restarts a crashing container under restartPolicy Always with the kubelet back-off: CrashLoopBackOff, growing restartCount', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(ns, 'crash', { main: 'echo run; exit 1' }, { restartPolicy: 'Always' });
    created.push(pod);
    await provider.createPod(pod);
    // The first exit restarts at once; the second waits 10 s.
    const backingOff = await waitForPod(
      provider,
      pod,
      (p) => containerStatus(p, 'main')?.state?.waiting?.reason === 'CrashLoopBackOff',
      'CrashLoopBackOff',
    );
    const status = containerStatus(backingOff, 'main');
    assert.equal(status?.restartCount, 1);
    assert.equal(status?.lastState?.terminated?.exitCode, 1);
    assert.match(status?.state?.waiting?.message ?? '', /back-off 10s restarting failed container=main/);
    assert.equal(backingOff.status?.phase, 'Running', 'a pod that restarts stays Running');
    const later = await waitForPod(
      provider,
      pod,
      (p) => (containerStatus(p, 'main')?.restartCount ?? 0) >= 2,
      'restartCount 2',
    );
    assert.equal(containerStatus(later, 'main')?.restartCount, 2);
    const instances = await engineContainers(docker, pod.metadata?.uid ?? '');
    const attempts = instances
      .filter((c) => c.Labels[LABELS.role] === 'app')
      .map((c) => Number(c.Labels[LABELS.attempt]));
    assert.ok(
      attempts.length <= 2,
      `only the newest two instances are kept, found attempts ${attempts.join(',')}`,
    );
  });

  it('restarts under OnFailure only until the container succeeds', async () => {
    const ns = uniqueName('ns');
    // Fails the first time (no marker in the emptyDir yet), succeeds the second.
    const pod = shellPod(
      ns,
      'retry',
      { main: 'if [ -e /state/ran ]; then exit 0; fi; touch /state/ran; exit 2' },
      { restartPolicy: 'OnFailure', volumes: [{ name: 'state', emptyDir: {} }] },
    );
    const main = pod.spec?.containers[0];
    if (main) main.volumeMounts = [{ name: 'state', mountPath: '/state' }];
    created.push(pod);
    await provider.createPod(pod);
    const done = await waitForPod(provider, pod, (p) => p.status?.phase === 'Succeeded', 'retry Succeeded');
    const status = containerStatus(done, 'main');
    assert.equal(status?.restartCount, 1);
    assert.equal(status?.state?.terminated?.exitCode, 0);
    assert.equal(status?.lastState?.terminated?.exitCode, 2);
  });

  it('reports a command the engine cannot start as a terminated StartError', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(ns, 'nocmd', { main: 'unused' });
    const main = pod.spec?.containers[0];
    if (main) main.command = ['/no/such/binary'];
    created.push(pod);
    await provider.createPod(pod);
    const failed = await waitForPod(provider, pod, (p) => p.status?.phase === 'Failed', 'nocmd Failed');
    const terminated = containerStatus(failed, 'main')?.state?.terminated;
    assert.notEqual(terminated?.exitCode, 0);
    assert.ok(
      terminated?.reason === 'StartError' || terminated?.reason === 'Error',
      `reason ${terminated?.reason}`,
    );
  });

  it('waits with ErrImagePull then ImagePullBackOff for an image it cannot pull, and ErrImageNeverPull under Never', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(ns, 'pull', { main: 'true' });
    const never = shellPod(ns, 'never', { main: 'true' });
    const [pullMain] = pod.spec?.containers ?? [];
    const [neverMain] = never.spec?.containers ?? [];
    if (!pullMain || !neverMain) throw new Error('containers missing');
    // Nothing listens on port 1: the pull fails without any network.
    pullMain.image = '127.0.0.1:1/missing/image:1.0';
    neverMain.image = 'missing/never:1.0';
    neverMain.imagePullPolicy = 'Never';
    created.push(pod, never);
    await provider.createPod(pod);
    await provider.createPod(never);
    const errPull = await waitForPod(
      provider,
      pod,
      (p) => containerStatus(p, 'main')?.state?.waiting?.reason === 'ErrImagePull',
      'ErrImagePull',
    );
    assert.match(
      containerStatus(errPull, 'main')?.state?.waiting?.message ?? '',
      /127\.0\.0\.1:1\/missing\/image:1\.0/,
    );
    assert.equal(errPull.status?.phase, 'Pending');
    const backOff = await waitForPod(
      provider,
      pod,
      (p) => containerStatus(p, 'main')?.state?.waiting?.reason === 'ImagePullBackOff',
      'ImagePullBackOff',
    );
    assert.equal(backOff.status?.phase, 'Pending');
    const neverPulled = await provider.getPod(ns, 'never');
    assert.equal(containerStatus(neverPulled ?? {}, 'main')?.state?.waiting?.reason, 'ErrImageNeverPull');
  });

  it('stops a pod gracefully: SIGTERM, no restart, removed once its containers exited', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(
      ns,
      'graceful',
      { main: "trap 'exit 0' TERM; while true; do sleep 0.1; done" },
      { restartPolicy: 'Always' },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'graceful Running');
    const deleting = withDeletion(pod, 60);
    await provider.deletePod(deleting);
    // Well before the 60 s deadline: the container handled SIGTERM and the next look removes the pod.
    await waitForGone(pod, 30_000);
    assert.deepEqual(await engineContainers(docker, pod.metadata?.uid ?? ''), []);
  });

  it('kills a container that ignores SIGTERM when the grace period ends, and keeps it running until then', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(
      ns,
      'stubborn',
      { main: "trap '' TERM; while true; do sleep 0.1; done" },
      { restartPolicy: 'Always' },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'stubborn Running');
    const graceSeconds = 4;
    const deleting = withDeletion(pod, graceSeconds);
    const deadline = Date.parse(String(deleting.metadata?.deletionTimestamp));
    await provider.deletePod(deleting);
    await provider.deletePod(deleting); // repeated: harmless
    const during = await provider.getPod(ns, 'stubborn');
    if (Date.now() < deadline - 500) {
      assert.ok(
        containerStatus(during ?? {}, 'main')?.state?.running,
        'still running within its grace period',
      );
      assert.ok(during?.metadata?.deletionTimestamp, 'reported as being deleted');
    }
    await waitForGone(pod, 30_000);
    assert.ok(Date.now() >= deadline, 'not removed before its deadline');
    assert.deepEqual(await engineContainers(docker, pod.metadata?.uid ?? ''), []);
  });

  it('kills at once a pod deleted gracefully, then force-deleted (our own report of it, its API object gone)', async () => {
    const ns = uniqueName('ns');
    const pod = shellPod(
      ns,
      'forced-later',
      { main: "trap '' TERM; while true; do sleep 0.1; done" },
      { restartPolicy: 'Always' },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'forced-later Running');
    await provider.deletePod(withDeletion(pod, 300));
    const reported = await provider.getPod(ns, 'forced-later');
    assert.ok(reported?.metadata?.deletionTimestamp, 'reported as being deleted, with its 300 s deadline');
    assert.ok(
      reported && containerStatus(reported, 'main')?.state?.running,
      'still running: it ignores SIGTERM',
    );
    // What the pipeline hands over once the API object is gone: the provider's own pod, without a grace period.
    await provider.deletePod(reported);
    assert.deepEqual(await engineContainers(docker, pod.metadata?.uid ?? ''), [], 'removed at once');
  });

  it('replaces the pod of another uid under the same name', async () => {
    const ns = uniqueName('ns');
    const old = shellPod(ns, 'same', { main: 'sleep 3600' }, { restartPolicy: 'Always' });
    const fresh = shellPod(ns, 'same', { main: 'sleep 3600' }, { restartPolicy: 'Always' });
    created.push(old, fresh);
    await provider.createPod(old);
    await provider.createPod(fresh);
    assert.deepEqual(await engineContainers(docker, old.metadata?.uid ?? ''), []);
    const got = await waitForPod(provider, fresh, (p) => p.status?.phase === 'Running', 'fresh Running');
    assert.equal(got.metadata?.uid, fresh.metadata?.uid);
  });

  function withDeletion(pod: V1Pod, graceSeconds: number): V1Pod {
    return {
      ...pod,
      metadata: {
        ...pod.metadata,
        deletionTimestamp: new Date(Math.ceil((Date.now() + graceSeconds * 1000) / 1000) * 1000),
        deletionGracePeriodSeconds: graceSeconds,
      },
    };
  }

  async function waitForGone(pod: V1Pod, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await provider.getPod(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '')) === undefined)
        return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`pod ${pod.metadata?.name} still on the engine after ${timeoutMs} ms`);
  }
});
