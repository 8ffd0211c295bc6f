import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { systemClock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log/logger.ts';
import { engineKindOnce } from '../../lib/provider/docker/engine-kind.ts';
import { engineSelinuxOnce } from '../../lib/provider/docker/engine-selinux.ts';
import { EngineState } from '../../lib/provider/docker/engine-state.ts';
import { ImagePuller } from '../../lib/provider/docker/image-puller.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { type AdvanceDeps, advancePod } from '../../lib/provider/docker/pod-advance.ts';
import { TerminationMessages } from '../../lib/provider/docker/termination-message.ts';
import { VolumeDelivery } from '../../lib/provider/docker/volume-delivery.ts';
import {
  engineContainers,
  INFRA_IMAGE,
  shellPod,
  TEST_IMAGE,
  testDockerProvider,
  testEngine,
  waitForPod,
} from '../support/docker.ts';
import { actionOf, type EngineEvent, EngineEvents } from '../support/engine-events.ts';
import { testEnv } from '../support/env.ts';
import { uniqueName, waitFor } from '../support/kube.ts';

/**
 * Removals of a pod while other invocations read it, on a real engine. The
 * engine's event stream shows what a removal and the readers did; the
 * engine's list alone cannot show an object that came back and went again.
 */
describe('docker provider: removals racing the readers of a pod', () => {
  const provider = testDockerProvider();
  const docker = testEngine();
  const events = new EngineEvents(docker);
  const created: V1Pod[] = [];
  after(async () => {
    await Promise.all(created.map((p) => provider.deletePod(p).catch(() => undefined)));
    events.close();
  });

  it('removes a pod once when a force delete races polls: nothing of it is created or started after the removal began', async () => {
    await events.all();
    const ns = uniqueName('ns');
    const node = uniqueName('vk');
    const pod = shellPod(
      ns,
      'raced',
      { main: 'sleep 3600', side: 'sleep 3600' },
      { restartPolicy: 'Always', node },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'raced Running');

    // Other invocations' providers, polling as pod-status does, before, during and after the removal.
    let removedAt = Number.POSITIVE_INFINITY;
    const polls = [testDockerProvider(), testDockerProvider(), testDockerProvider()].map(async (other, i) => {
      let after = 0;
      for (let n = 0; after < 3; n++) {
        if (Date.now() > removedAt) after++;
        await (n % 2 === i % 2 ? other.listPods(node) : other.getPod(ns, 'raced')).catch(() => undefined);
      }
    });
    try {
      // A delete with no grace period, as for a force delete: removed at once.
      await provider.deletePod(pod);
    } finally {
      removedAt = Date.now();
      await Promise.all(polls);
    }

    assert.deepEqual(await engineContainers(docker, uid(pod)), [], 'nothing of the pod is left');
    await events.catchUp(TEST_IMAGE);
    const mine = await events.of(uid(pod));
    const marked = mine.findIndex((e) => is(e, 'create', 'deleting'));
    assert.ok(marked >= 0, 'the removal marked the pod first');
    assert.deepEqual(
      mine
        .slice(marked)
        .filter(
          (e) => ['create', 'start'].includes(actionOf(e).action ?? '') && actionOf(e).role !== 'deleting',
        )
        .map(describeEvent),
      [],
      'nothing created or started once the removal began',
    );
    assert.deepEqual(counts(mine), { infraCreated: 1, infraRemoved: 1, marked: 1 });
  });

  it('does not bring back a uid whose deletion another invocation left halfway (its marker alone on the engine)', async () => {
    await events.all();
    const ns = uniqueName('ns');
    const node = uniqueName('vk');
    const pod = shellPod(
      ns,
      'late',
      { main: "trap '' TERM; while true; do sleep 0.1; done" },
      { restartPolicy: 'Always', node },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'late Running');
    const graceSeconds = 300;
    await provider.deletePod({
      ...pod,
      metadata: {
        ...pod.metadata,
        deletionTimestamp: new Date(Date.now() + graceSeconds * 1000),
        deletionGracePeriodSeconds: graceSeconds,
      },
    });
    // What a force removal in another process leaves when it dies halfway: the instances and the
    // infra container gone, the marker not yet.
    const containers = await engineContainers(docker, uid(pod));
    const byRole = (role: string) => containers.filter((c) => c.Labels[LABELS.role] === role);
    for (const c of [...byRole('app'), ...byRole('infra')])
      await docker.getContainer(c.Id).remove({ force: true });
    assert.equal(byRole('deleting').length, 1, 'the graceful delete marked the pod');

    // A create that read the pod before its delete, delivered late.
    const status = await provider.createPod(pod);
    assert.equal(status, undefined, 'no status: the pod is gone');
    assert.deepEqual(
      await engineContainers(docker, uid(pod)),
      [],
      'the removal was finished, nothing created',
    );
    await events.catchUp(TEST_IMAGE);
    assert.equal(counts(await events.of(uid(pod))).infraCreated, 1, 'the infra container was created once');
  });

  it("does not restart a container that exited on a graceful delete's SIGTERM for a poll that read the pod before the delete marked it", async () => {
    await events.all();
    const ns = uniqueName('ns');
    const node = uniqueName('vk');
    const pod = shellPod(
      ns,
      'stale',
      { main: "trap 'exit 0' TERM; while true; do sleep 0.1; done" },
      { restartPolicy: 'Always', node },
    );
    created.push(pod);
    await provider.createPod(pod);
    await waitForPod(provider, pod, (p) => p.status?.phase === 'Running', 'stale Running');
    await provider.deletePod({
      ...pod,
      metadata: {
        ...pod.metadata,
        deletionTimestamp: new Date(Date.now() + 60_000),
        deletionGracePeriodSeconds: 60,
      },
    });
    await waitFor(
      async () =>
        (await engineContainers(docker, uid(pod))).some(
          (c) => c.Labels[LABELS.role] === 'app' && c.State !== 'running',
        ),
      { timeoutMs: 30_000, what: 'the container to exit on SIGTERM' },
    );
    // What a poll holds that listed the node before the marker was created and inspected the
    // container after it exited: the exit, no marker.
    const deps = advanceDeps();
    const read = (await deps.state.pods({ [LABELS.uid]: uid(pod) })).get(uid(pod));
    assert.ok(read?.deleting, 'the delete marked the pod');
    const { deleting: _marker, ...stale } = read;
    assert.equal(await advancePod(deps, stale), undefined, 'the pod is reported gone');
    assert.deepEqual(await engineContainers(docker, uid(pod)), [], 'the stopped pod was removed');
    await events.catchUp(TEST_IMAGE);
    assert.deepEqual(
      (await events.of(uid(pod))).filter((e) => is(e, 'create', 'app')).map(describeEvent),
      ['create app main'],
      'the container was never restarted',
    );
  });
});

/** What a provider's polls move pods on with, on the run's engine. */
function advanceDeps(): AdvanceDeps {
  const env = testEnv();
  const docker = testEngine(env);
  const log = createLogger({ level: process.env.SVK_TEST_LOG_LEVEL ?? 'warn' });
  return {
    docker,
    state: new EngineState(docker, env.docker.network, systemClock),
    puller: new ImagePuller({ docker, clock: systemClock, log, timeoutMs: 30_000 }),
    settings: { network: env.docker.network, infraImage: INFRA_IMAGE, hostIp: '127.0.0.1' },
    engineKind: engineKindOnce(docker),
    engineSelinux: engineSelinuxOnce(docker),
    clock: systemClock,
    log,
    registryAuth: async () => undefined,
    messages: new TerminationMessages(docker, engineKindOnce(docker)),
    mountpoints: new Map(),
    volumes: new VolumeDelivery({
      docker,
      clock: systemClock,
      log,
      sources: { configMap: async () => undefined, secret: async () => undefined },
      swapImage: 'unused',
      pullImage: async () => {},
    }),
  };
}

function uid(pod: V1Pod): string {
  return pod.metadata?.uid ?? '';
}

function is(e: EngineEvent, action: string, role: string): boolean {
  const a = actionOf(e);
  return a.action === action && a.role === role;
}

function counts(mine: readonly EngineEvent[]) {
  return {
    infraCreated: mine.filter((e) => is(e, 'create', 'infra')).length,
    infraRemoved: mine.filter((e) => is(e, 'remove', 'infra')).length,
    marked: mine.filter((e) => is(e, 'create', 'deleting')).length,
  };
}

function describeEvent(e: EngineEvent): string {
  const a = actionOf(e);
  return `${a.action} ${a.role} ${e.Actor?.Attributes?.[LABELS.container] ?? ''}`.trim();
}
