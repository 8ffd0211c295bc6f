import assert from 'node:assert/strict';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import { waitFor } from '../../support/kube.ts';
import { condition, containerStatus, ms, refOf } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;
/** The mock answers probes and times hooks by these annotations (lib/provider/mock/mock-probes.ts); other providers ignore them. */
const MOCK = 'mock.serverless-virtual-kubelet.io/';

/**
 * Containers as the kubelet runs them: readiness (a Service's endpoints
 * follow it), readiness gates, liveness and startup probes, preStop, the
 * termination message. Every probe is an exec probe on a file the
 * container's script makes or removes, so that the same pod means the same
 * on every provider: the mock answers from its annotations what the file
 * would, the ECS simulation's health checks from the script's touch and rm;
 * readiness and liveness probe every 5 s, the shortest interval of an ECS
 * health check.
 */
export function probeScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'readiness-endpoints',
    "a failing readiness probe keeps the pod out of its Service's endpoints; once it passes the pod is in",
    4 * MINUTE,
    readinessEndpoints,
  );
  scenario(
    ctx,
    'readiness-gate',
    'a readiness gate holds Ready until its condition is True',
    3 * MINUTE,
    readinessGate,
  );
  scenario(
    ctx,
    'liveness-restart',
    'a failing liveness probe restarts the container with back-off, with Unhealthy and Killing Events',
    4 * MINUTE,
    livenessRestart,
  );
  scenario(
    ctx,
    'startup-probe',
    'a startup probe holds liveness and readiness until it passes',
    3 * MINUTE,
    startup,
  );
  scenario(ctx, 'prestop', 'on delete the preStop hook runs before the stop signal', 3 * MINUTE, preStop);
  scenario(
    ctx,
    'termination-message',
    'a termination message is reported: from the file, and from the log with FallbackToLogsOnError',
    3 * MINUTE,
    terminationMessage,
  );
}

async function readinessEndpoints(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('ready');
  await h.admin.core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    },
  });
  await h.pods.create(ns, {
    metadata: {
      name: 'web',
      labels: { app: 'web' },
      annotations: { [`${MOCK}probe.main.readiness`]: 'pass-after=12' },
    },
    spec: h.pods.spec({
      containers: [
        shell('main', 'sleep 12; touch /tmp/ready; sleep 3600', {
          readinessProbe: {
            exec: { command: ['test', '-e', '/tmp/ready'] },
            periodSeconds: 5,
            timeoutSeconds: 5,
          },
        }),
      ],
    }),
  });
  const running = await h.pods.waitFor(
    ns,
    'web',
    (p) => !!containerStatus(p, 'main')?.state?.running && !!p.status?.podIP,
    {
      timeoutMs: 2 * MINUTE,
      what: 'pod web running with an IP',
    },
  );
  const ip = running.status?.podIP ?? '';
  const endpoints = async () => {
    const e = await h.admin.core
      .readNamespacedEndpoints({ namespace: ns, name: 'web' })
      .catch(() => undefined);
    const subsets = e?.subsets ?? [];
    return {
      ready: subsets.some((s) => (s.addresses ?? []).some((a) => a.ip === ip)),
      notReady: subsets.some((s) => (s.notReadyAddresses ?? []).some((a) => a.ip === ip)),
    };
  };
  // While the probe fails: listed as not ready, never as ready.
  const seen = await waitFor(
    async () => {
      const now = await endpoints();
      const pod = await h.pods.read(ns, 'web');
      if (pod && condition(pod, 'Ready') === 'True') return { early: true, ...now };
      return now.notReady ? { early: false, ...now } : undefined;
    },
    { timeoutMs: MINUTE, intervalMs: 250, what: 'the unready pod among the endpoints not ready' },
  );
  assert.equal(seen.early, false, 'the pod turned Ready only after the endpoints listed it not ready');
  assert.equal(seen.ready, false, 'an unready pod is not among the ready endpoints');
  const ready = await h.pods.waitFor(ns, 'web', (p) => condition(p, 'Ready') === 'True', {
    timeoutMs: 2 * MINUTE,
    what: 'pod web Ready',
  });
  const started = ms(containerStatus(ready, 'main')?.state?.running?.startedAt);
  const readyAt = ms(ready.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime);
  assert.ok(
    readyAt - started >= 11_000,
    `Ready ${readyAt - started} ms after the start: after the probe passed`,
  );
  await waitFor(async () => (await endpoints()).ready, {
    timeoutMs: MINUTE,
    intervalMs: 250,
    what: 'the ready pod among the Service endpoints',
  });
}

async function readinessGate(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('gate');
  const gate = 'example.com/load-balancer';
  await h.pods.create(ns, {
    metadata: { name: 'gated' },
    spec: h.pods.spec({
      readinessGates: [{ conditionType: gate }],
      containers: [shell('main', 'sleep 3600')],
    }),
  });
  const held = await h.pods.waitFor(ns, 'gated', (p) => condition(p, 'ContainersReady') === 'True', {
    timeoutMs: 2 * MINUTE,
    what: 'containers ready',
  });
  const ready = held.status?.conditions?.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'False', 'Ready held by the gate');
  assert.equal(ready?.reason, 'ReadinessGatesNotReady');
  assert.equal(ready?.message, `corresponding condition of pod readiness gate "${gate}" does not exist.`);
  const setGate = (status: string) =>
    h.admin.core.patchNamespacedPodStatus(
      { namespace: ns, name: 'gated', body: { status: { conditions: [{ type: gate, status }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
  await setGate('True');
  await h.pods.waitFor(ns, 'gated', (p) => condition(p, 'Ready') === 'True', {
    timeoutMs: MINUTE,
    what: 'Ready once the gate is True',
  });
  await setGate('False');
  const closed = await h.pods.waitFor(ns, 'gated', (p) => condition(p, 'Ready') === 'False', {
    timeoutMs: MINUTE,
    what: 'not Ready once the gate is False again',
  });
  assert.equal(condition(closed, 'ContainersReady'), 'True');
  assert.equal(condition(closed, gate), 'False', "the gate's condition is the controller's, kept");
}

async function livenessRestart(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('live');
  await h.pods.create(ns, {
    metadata: { name: 'live', annotations: { [`${MOCK}probe.main.liveness`]: 'fail-after=4' } },
    spec: h.pods.spec({
      containers: [
        shell('main', 'touch /tmp/alive; sleep 4; rm /tmp/alive; sleep 3600', {
          livenessProbe: {
            exec: { command: ['test', '-e', '/tmp/alive'] },
            periodSeconds: 5,
            failureThreshold: 2,
          },
        }),
      ],
    }),
  });
  let backOff = false;
  const counts: number[] = [];
  const pod = await h.pods.waitFor(
    ns,
    'live',
    (p) => {
      const c = containerStatus(p, 'main');
      if (c) counts.push(c.restartCount);
      if (c?.state?.waiting?.reason === 'CrashLoopBackOff') backOff = true;
      return backOff && (c?.restartCount ?? 0) >= 2;
    },
    { timeoutMs: 3 * MINUTE, what: 'restarted twice, with a back-off between' },
  );
  assert.deepEqual(
    counts,
    [...counts].sort((a, b) => a - b),
    `restartCount never goes down: ${counts}`,
  );
  assert.ok(containerStatus(pod, 'main')?.lastState?.terminated, 'the killed instance is the last state');
  assert.equal(pod.status?.phase, 'Running');
  assert.equal((await h.probe.history(refOf(pod)))?.creates, 1, 'restarts are not new creates');
  const events = await podEvents(h, pod);
  assert.ok(
    events.some((e) => e.reason === 'Unhealthy' && e.message?.startsWith('Liveness probe failed:')),
    `an Unhealthy event: ${describe(events)}`,
  );
  assert.ok(
    events.some(
      (e) =>
        e.reason === 'Killing' && e.message === 'Container main failed liveness probe, will be restarted',
    ),
    `a Killing event: ${describe(events)}`,
  );
}

async function startup(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('startup');
  // A 5 s timeout, as Kubernetes' own specs give exec probes: the default 1 s is short for an exec on a loaded host.
  const probe = (failureThreshold: number) => ({
    exec: { command: ['test', '-e', '/tmp/started'] },
    periodSeconds: 1,
    timeoutSeconds: 5,
    failureThreshold,
  });
  await h.pods.create(ns, {
    metadata: {
      name: 'slow',
      annotations: {
        [`${MOCK}probe.main.startup`]: 'pass-after=10',
        [`${MOCK}probe.main.liveness`]: 'pass-after=10',
        [`${MOCK}probe.main.readiness`]: 'pass-after=10',
      },
    },
    spec: h.pods.spec({
      containers: [
        shell('main', 'sleep 10; touch /tmp/started; sleep 3600', {
          startupProbe: probe(60),
          // Failing before the file exists, it would kill the container at once if it were not held.
          livenessProbe: probe(1),
          readinessProbe: probe(1),
        }),
      ],
    }),
  });
  const waiting = await h.pods.waitFor(ns, 'slow', (p) => !!containerStatus(p, 'main')?.state?.running, {
    timeoutMs: 2 * MINUTE,
    what: 'running',
  });
  const early = containerStatus(waiting, 'main');
  const ready = await h.pods.waitFor(ns, 'slow', (p) => condition(p, 'Ready') === 'True', {
    timeoutMs: 2 * MINUTE,
    what: 'Ready once started',
  });
  const main = containerStatus(ready, 'main');
  assert.equal(main?.restartCount, 0, 'liveness was held until the startup probe passed');
  assert.equal(main?.started, true);
  const startedAt = ms(main?.state?.running?.startedAt);
  const readyAt = ms(ready.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime);
  assert.ok(
    readyAt - startedAt >= 9_000,
    `Ready ${readyAt - startedAt} ms after the start, not before the startup probe`,
  );
  if (ms(early?.state?.running?.startedAt) + 8_000 > Date.now()) assert.equal(early?.started, false);
}

async function preStop(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('prestop');
  await h.pods.create(ns, {
    metadata: { name: 'hooked', annotations: { [`${MOCK}hook.main.pre-stop`]: 'seconds=3' } },
    spec: h.pods.spec({
      terminationGracePeriodSeconds: 120,
      containers: [
        shell('main', "trap 'exit 0' TERM; while true; do sleep 1; done", {
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 3'] } } },
        }),
      ],
    }),
  });
  const pod = await h.pods.waitFor(ns, 'hooked', (p) => condition(p, 'Ready') === 'True', {
    timeoutMs: 2 * MINUTE,
    what: 'pod hooked Ready',
  });
  const { probe } = h;
  assert.ok(probe.hooks, 'the provider reports its hooks');
  const deletedAt = Date.now();
  await h.pods.delete(ns, 'hooked');
  const hooks = await waitFor(
    async () => {
      const seen = await probe.hooks?.(refOf(pod));
      return seen?.preStopAt !== undefined && seen.stopSignalAt !== undefined ? seen : undefined;
    },
    { timeoutMs: MINUTE, intervalMs: 250, what: 'the preStop hook and the stop signal' },
  );
  const { preStopAt = 0, stopSignalAt = 0 } = hooks;
  assert.ok(preStopAt >= deletedAt - 1_000, 'the hook ran on the delete');
  assert.ok(
    stopSignalAt - preStopAt >= 2_500,
    `SIGTERM ${stopSignalAt - preStopAt} ms after the hook began: after it`,
  );
  // At the tick cadence the delete, the removal and the force delete each wait for a tick: about 30 s.
  const goneAt = await h.pods.waitForGone(ns, 'hooked', pod.metadata?.uid ?? '', 2 * MINUTE);
  assert.ok(
    goneAt - deletedAt < 90_000,
    `gone ${goneAt - deletedAt} ms after the delete: on the signal, not at the end of its 120 s grace period`,
  );
}

async function terminationMessage(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('msg');
  const never = (script: string, policy?: string) =>
    h.pods.spec({
      restartPolicy: 'Never',
      containers: [
        shell('main', script, {
          terminationMessagePath: '/dev/termination-log',
          ...(policy ? { terminationMessagePolicy: policy } : {}),
        }),
      ],
    });
  await h.pods.create(ns, { metadata: { name: 'file' }, spec: never('echo -n DONE > /dev/termination-log') });
  await h.pods.create(ns, {
    metadata: { name: 'logs' },
    spec: never('echo -n DONE; false', 'FallbackToLogsOnError'),
  });
  const [file, logs] = await Promise.all([
    h.pods.waitForPhase(ns, 'file', 'Succeeded', 2 * MINUTE),
    h.pods.waitForPhase(ns, 'logs', 'Failed', 2 * MINUTE),
  ]);
  assert.equal(containerStatus(file, 'main')?.state?.terminated?.message, 'DONE');
  assert.equal(containerStatus(logs, 'main')?.state?.terminated?.message, 'DONE');
}

async function podEvents(h: PipelineHarness, pod: V1Pod): Promise<CoreV1Event[]> {
  const namespace = pod.metadata?.namespace ?? '';
  return waitFor(
    async () => {
      const list = await h.admin.core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
      });
      return list.items.some((e) => e.reason === 'Killing') ? list.items : undefined;
    },
    { timeoutMs: MINUTE, intervalMs: 500, what: 'the Events of the kill' },
  );
}

function describe(events: readonly CoreV1Event[]): string {
  return events.map((e) => `${e.reason}: ${e.message}`).join(' | ');
}
