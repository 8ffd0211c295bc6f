import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { DockerPodProvider } from '../../lib/provider/docker/docker-pods.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { proberName } from '../../lib/provider/docker/prober/prober-container.ts';
import { isProviderUnsupported, type ProviderEventRecorder } from '../../lib/provider/provider.ts';
import {
  containerStatus,
  engineContainers,
  shellContainer,
  shellPod,
  testDockerProvider,
  testEngine,
} from '../support/docker.ts';
import { uniqueName, waitFor } from '../support/kube.ts';

/**
 * Probes and lifecycle hooks on real containers: the provider's node
 * prober (a container on the run's engine, running the bundled script with
 * the offline node image) probes them, and the provider reads its report
 * in each listPods round, as pod-status's rounds do. The Events it records
 * are captured by the provider's event port (the pipeline's writes them to
 * the API server: the conformance suite checks those).
 */

const NODE = 'vk-probes';

interface Recorded {
  uid: string;
  type: string;
  reason: string;
  message: string;
}

describe('docker provider: probes and hooks on a real engine', () => {
  const events: Recorded[] = [];
  const recorder: ProviderEventRecorder = {
    record: async (pod, type, reason, message) => {
      events.push({ uid: pod.metadata?.uid ?? '', type, reason, message });
    },
  };
  const provider = testDockerProvider({ events: recorder });
  const docker = testEngine();
  const created: V1Pod[] = [];
  after(async () => {
    await Promise.all(created.map((p) => provider.deletePod(p).catch(() => undefined)));
    // A round of the node without probed pods removes its prober.
    await waitFor(
      async () => {
        await provider.listPods(NODE);
        return (
          (await docker.listContainers({ all: true, filters: { name: [proberName(NODE)] } })).length === 0
        );
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'the prober removed once no pod needs it' },
    );
  });

  const eventsOf = (pod: V1Pod) => events.filter((e) => e.uid === pod.metadata?.uid);
  const create = async (pod: V1Pod) => {
    created.push(pod);
    await provider.createPod(pod);
  };

  it('keeps a container unready until its httpGet readiness probe passes, not before the initial delay', async () => {
    const pod = probedPod('ready', {
      ...webContainer('web', 'sleep 6; serve'),
      ports: [{ name: 'http', containerPort: 8080 }],
      readinessProbe: { httpGet: { path: '/', port: 'http' }, initialDelaySeconds: 3, periodSeconds: 1 },
    });
    await create(pod);
    const running = await waitListed(
      provider,
      pod,
      (p) => containerStatus(p, 'web')?.state?.running !== undefined,
    );
    assert.equal(containerStatus(running, 'web')?.ready, false, 'not ready while the server is not up');
    assert.equal(readyCondition(running)?.status, 'False');
    const ready = await waitListed(provider, pod, (p) => containerStatus(p, 'web')?.ready === true);
    const startedAt = Date.parse(String(containerStatus(ready, 'web')?.state?.running?.startedAt));
    const readyAt = Date.parse(String(readyCondition(ready)?.lastTransitionTime));
    assert.equal(readyCondition(ready)?.status, 'True');
    assert.ok(
      readyAt - startedAt >= 6_000,
      `Ready ${readyAt - startedAt} ms after the start, after the server`,
    );
    assert.ok(
      eventsOf(pod).some((e) => e.reason === 'Unhealthy' && /^Readiness probe failed: /.test(e.message)),
      'an Unhealthy event for the failures before the server was up',
    );
  });

  it('restarts a container whose exec liveness probe fails, with Unhealthy and Killing events', async () => {
    const pod = probedPod('live', {
      ...shellContainer('main', 'touch /tmp/healthy; sleep 4; rm /tmp/healthy; sleep 3600'),
      livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 2 },
    });
    await create(pod);
    const restarted = await waitListed(
      provider,
      pod,
      (p) => (containerStatus(p, 'main')?.restartCount ?? 0) >= 1,
      90_000,
    );
    const main = containerStatus(restarted, 'main');
    assert.ok(main?.lastState?.terminated, 'the killed instance is the last state');
    const mine = eventsOf(pod);
    assert.ok(
      mine.some((e) => e.reason === 'Unhealthy' && /^Liveness probe failed: cat: .*healthy/.test(e.message)),
      `Unhealthy with the probe's output: ${JSON.stringify(mine)}`,
    );
    assert.ok(
      mine.some(
        (e) =>
          e.type === 'Normal' &&
          e.reason === 'Killing' &&
          e.message === 'Container main failed liveness probe, will be restarted',
      ),
      'a Killing event',
    );
  });

  it('holds liveness and readiness until the startup probe passes; tcpSocket probes reach the pod IP', async () => {
    const pod = probedPod('startup', {
      ...webContainer('web', 'sleep 5; touch /tmp/started; serve'),
      startupProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 30 },
      livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
      readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
    });
    await create(pod);
    const running = await waitListed(
      provider,
      pod,
      (p) => containerStatus(p, 'web')?.state?.running !== undefined,
    );
    assert.equal(
      containerStatus(running, 'web')?.started,
      false,
      'not started before the startup probe passes',
    );
    const ready = await waitListed(provider, pod, (p) => containerStatus(p, 'web')?.ready === true);
    const web = containerStatus(ready, 'web');
    assert.equal(web?.started, true);
    assert.equal(web?.restartCount, 0, 'the liveness probe, failing before the server is up, was held');
  });

  it('fails a probe on a port name the container does not declare, with an Unhealthy event', async () => {
    const pod = probedPod('noport', {
      ...webContainer('web', 'serve'),
      readinessProbe: { httpGet: { path: '/', port: 'missing' }, periodSeconds: 1 },
    });
    await create(pod);
    await waitFor(
      async () => {
        await provider.listPods(NODE);
        return eventsOf(pod).find((e) =>
          e.message.includes('Readiness probe errored: strconv.Atoi: parsing "missing": invalid syntax'),
        );
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'an Unhealthy event naming the port' },
    );
    const listed = await waitListed(
      provider,
      pod,
      (p) => containerStatus(p, 'web')?.state?.running !== undefined,
    );
    assert.equal(containerStatus(listed, 'web')?.ready, false);
  });

  it('reports a container Running only once its postStart hook returned; a failing one kills it', async () => {
    const ok = probedPod('poststart', {
      ...shellContainer('main', 'sleep 3600'),
      lifecycle: { postStart: { exec: { command: ['sh', '-c', 'sleep 3; touch /tmp/hooked'] } } },
    });
    const bad = probedPod(
      'poststart-bad',
      {
        ...shellContainer('main', 'sleep 3600'),
        lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 3'] } } },
      },
      'Never',
    );
    await Promise.all([create(ok), create(bad)]);
    const waiting = await waitListed(
      provider,
      ok,
      (p) => containerStatus(p, 'main')?.state?.waiting !== undefined,
    );
    assert.equal(containerStatus(waiting, 'main')?.state?.waiting?.reason, 'ContainerCreating');
    const running = await waitListed(
      provider,
      ok,
      (p) => containerStatus(p, 'main')?.state?.running !== undefined,
    );
    assert.equal(containerStatus(running, 'main')?.ready, true);
    const uid = ok.metadata?.uid ?? '';
    const [app] = await docker.listContainers({
      filters: { label: [`${LABELS.uid}=${uid}`, `${LABELS.role}=app`] },
    });
    const check = await docker
      .getContainer(app?.Id ?? '')
      .exec({ Cmd: ['test', '-e', '/tmp/hooked'], AttachStdout: true, AttachStderr: true });
    const output = await check.start({});
    output.resume();
    await new Promise((resolve) => output.on('end', resolve));
    await waitFor(async () => ((await check.inspect()).Running ? undefined : true), {
      timeoutMs: 10_000,
      intervalMs: 100,
      what: 'the check exec',
    });
    assert.equal(
      (await check.inspect()).ExitCode,
      0,
      'the hook ran before the container was reported Running',
    );

    const failed = await waitListed(provider, bad, (p) => p.status?.phase === 'Failed', 90_000);
    assert.ok(containerStatus(failed, 'main')?.state?.terminated, 'killed after its failed hook');
    const mine = eventsOf(bad);
    assert.ok(
      mine.some(
        (e) =>
          e.reason === 'FailedPostStartHook' &&
          /^Exec lifecycle hook \(\[sh -c exit 3\]\) for Container "main" in Pod "poststart-bad_/.test(
            e.message,
          ),
      ),
      `FailedPostStartHook: ${JSON.stringify(mine)}`,
    );
  });

  it('runs preStop on delete before the stop signal, within the grace period', async () => {
    const pod = probedPod('prestop', {
      ...shellContainer('main', "trap 'echo term; exit 0' TERM; echo up; while true; do sleep 1; done"),
      lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo prestop > /proc/1/fd/1; sleep 2'] } } },
    });
    pod.spec = { ...pod.spec, containers: pod.spec?.containers ?? [], terminationGracePeriodSeconds: 30 };
    await create(pod);
    await waitListed(provider, pod, (p) => containerStatus(p, 'main')?.state?.running !== undefined);
    const uid = pod.metadata?.uid ?? '';
    const [app] = await docker.listContainers({
      filters: { label: [`${LABELS.uid}=${uid}`, `${LABELS.role}=app`] },
    });
    const deletedAt = Date.now();
    await provider.deletePod({
      ...pod,
      metadata: {
        ...pod.metadata,
        deletionTimestamp: new Date(deletedAt + 30_000),
        deletionGracePeriodSeconds: 30,
      },
    });
    const exited = await waitFor(
      async () => {
        const info = await docker.getContainer(app?.Id ?? '').inspect();
        return info.State.Running ? undefined : info;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'the container stopped' },
    );
    assert.equal(exited.State.ExitCode, 0, 'it stopped on SIGTERM (its trap), not on the grace period');
    const log = (await docker.getContainer(app?.Id ?? '').logs({ stdout: true, stderr: true })).toString(
      'latin1',
    );
    const lines = log
      .split('\n')
      .map((l) => l.replace(/^[\s\S]{8}/, '').trim())
      .filter(Boolean);
    assert.ok(
      lines.indexOf('prestop') >= 0 && lines.indexOf('prestop') < lines.indexOf('term'),
      `order: ${lines}`,
    );
    assert.ok(Date.parse(exited.State.FinishedAt) - deletedAt >= 2_000, 'SIGTERM came after the hook ran');
  });

  it('refuses a probe without a handler, a negative period and a grpc probe, naming each field, creating nothing', async () => {
    const pod = probedPod('bad', {
      ...shellContainer('main', 'sleep 3600'),
      readinessProbe: { periodSeconds: -5 },
      livenessProbe: { grpc: { port: 9000 } },
    });
    await assert.rejects(provider.createPod(pod), (err: unknown) => {
      assert.ok(isProviderUnsupported(err), String(err));
      assert.deepEqual(err.reasons, [
        'spec.containers[main].readinessProbe: must specify a handler type',
        'spec.containers[main].readinessProbe.periodSeconds: must be a whole number greater than or equal to 0, not -5',
        'spec.containers[main].livenessProbe.grpc: grpc probes are not supported (Kubernetes 1.24+)',
      ]);
      return true;
    });
    assert.deepEqual(await engineContainers(docker, pod.metadata?.uid ?? ''), [], 'nothing created');
  });

  function probedPod(name: string, container: V1Container, restartPolicy = 'Always'): V1Pod {
    const pod = shellPod(uniqueName('probes'), name, {}, { node: NODE, restartPolicy });
    return { ...pod, spec: { ...pod.spec, containers: [container], terminationGracePeriodSeconds: 5 } };
  }
});

/** A container serving `/` on 8080 once its script reaches `serve`. */
function webContainer(name: string, script: string): V1Container {
  const serve = 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www';
  return shellContainer(name, script.replace(/serve$/, serve));
}

function readyCondition(pod: V1Pod) {
  return pod.status?.conditions?.find((c) => c.type === 'Ready');
}

/** Polls listPods of the pod's node (a status round: it keeps the prober and reads its report) until `done`. */
function waitListed(
  provider: DockerPodProvider,
  pod: V1Pod,
  done: (pod: V1Pod) => boolean,
  timeoutMs = 60_000,
): Promise<V1Pod> {
  return waitFor(
    async () => {
      const listed = await provider.listPods(pod.spec?.nodeName ?? '');
      const got = listed.find((p) => p.metadata?.uid === pod.metadata?.uid);
      return got && done(got) ? got : undefined;
    },
    { timeoutMs, intervalMs: 300, what: `pod ${pod.metadata?.name}` },
  );
}
