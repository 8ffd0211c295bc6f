import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { POD_EVENT_DETAIL_TYPE, POD_EVENT_SOURCE } from '../../../lib/events/pod-event.ts';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import type { PodRef } from '../../harness/provider-setup.ts';
import { waitFor } from '../../support/kube.ts';
import { containerStatus, isRunningAndReady, ms, refOf } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;
/** A process that ignores SIGTERM, so that only the end of the grace period (or a force delete) stops it. */
const IGNORES_TERM = "trap '' TERM; sleep 3600";

/** Deletes: graceful, forced, a same-name successor, and a pod the API server never had. */
export function deletionScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'graceful-delete',
    'graceful delete: the provider is told at once, the API object goes after termination, not before the grace period',
    4 * MINUTE,
    gracefulDelete,
  );
  scenario(
    ctx,
    'force-delete',
    'force delete: the API object goes at once, the provider stops the pod without waiting for its grace period',
    5 * MINUTE,
    forceDelete,
  );
  scenario(
    ctx,
    'recreate',
    "same-name recreate: the new pod is untouched by the old pod's late delete",
    4 * MINUTE,
    recreate,
  );
  scenario(
    ctx,
    'dangling',
    'a dangling pod (in the provider on our node, unknown to the API server) is removed',
    3 * MINUTE,
    dangling,
  );
}

/**
 * A Running pod whose process ignores SIGTERM. A SIGTERM that came before its
 * shell ran `trap` would still kill it, so this returns only once the
 * container has run for a few seconds (a shell reaches its first builtin in
 * milliseconds; the margin is for a loaded machine).
 */
async function runningPod(h: PipelineHarness, ns: string, name: string, grace: number): Promise<V1Pod> {
  await h.pods.create(ns, {
    metadata: { name },
    spec: h.pods.spec({ terminationGracePeriodSeconds: grace, containers: [shell('main', IGNORES_TERM)] }),
  });
  const pod = await h.pods.waitFor(ns, name, isRunningAndReady, {
    timeoutMs: 2 * MINUTE,
    what: `pod ${name} Running`,
  });
  const startedAt = ms(containerStatus(pod, 'main')?.state?.running?.startedAt);
  await waitFor(() => Date.now() >= startedAt + TRAP_MARGIN_MS, {
    timeoutMs: TRAP_MARGIN_MS + 2_000,
    what: `pod ${name}'s shell to have set its trap`,
  });
  return pod;
}

const TRAP_MARGIN_MS = 5_000;

/** Waits until the provider no longer runs the pod nor lists it. */
async function providerLetGo(h: PipelineHarness, ref: PodRef, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const history = await h.probe.history(ref);
      const listed = (await h.probe.pods(h.node)).some((p) => p.uid === ref.uid);
      return !history?.running && !listed;
    },
    { timeoutMs, intervalMs: 500, what: `the provider to stop and let go of ${ref.namespace}/${ref.name}` },
  );
}

async function gracefulDelete(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('graceful');
  const pod = await runningPod(h, ns, 'slow', 30);
  const ref = refOf(pod);
  await h.pods.delete(ns, 'slow');
  const terminating = await h.pods.read(ns, 'slow');
  const graceEnds = ms(terminating?.metadata?.deletionTimestamp);
  assert.ok(Number.isFinite(graceEnds), 'the API server set the deletion timestamp (delete time + grace)');

  await waitFor(async () => ((await h.probe.history(ref))?.deletes ?? 0) >= 1, {
    timeoutMs: 20_000,
    intervalMs: 250,
    what: 'the provider to be told of the delete',
  });
  const meanwhile = await h.pods.read(ns, 'slow');
  assert.equal(meanwhile?.metadata?.uid, ref.uid, 'the API object stays while the container still runs');
  assert.equal((await h.probe.history(ref))?.running, true, 'the container ignores SIGTERM: it still runs');

  const goneAt = await h.pods.waitForGone(ns, 'slow', ref.uid, 2 * MINUTE);
  assert.ok(
    goneAt >= graceEnds,
    `the API object went ${graceEnds - goneAt} ms before its grace period ended`,
  );
  await providerLetGo(h, ref, MINUTE);
  assert.equal((await h.probe.history(ref))?.creates ?? 1, 1);
}

async function forceDelete(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('force');
  const pod = await runningPod(h, ns, 'forced', 300);
  const ref = refOf(pod);
  await h.pods.delete(ns, 'forced', 0);
  assert.equal(await h.pods.read(ns, 'forced'), undefined, 'the API object is gone at once');
  // Far less than the 300 s grace period: a force delete does not wait for it
  // (beyond what the backend itself takes to kill a process ignoring SIGTERM).
  await providerLetGo(h, ref, 90_000 + (h.provider.forcedStopSeconds ?? 0) * 1000);
  const history = await h.probe.history(ref);
  if (history) assert.equal(history.deletes, 1, 'deleted once in the provider');
}

async function recreate(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('recreate');
  const spec = () =>
    h.pods.spec({ terminationGracePeriodSeconds: 5, containers: [shell('main', 'sleep 3600')] });
  await h.pods.create(ns, { metadata: { name: 'same' }, spec: spec() });
  const old = await h.pods.waitFor(ns, 'same', isRunningAndReady, {
    timeoutMs: 2 * MINUTE,
    what: 'the first pod Running',
  });
  const oldRef = refOf(old);
  await h.pods.delete(ns, 'same');
  await h.pods.waitForGone(ns, 'same', oldRef.uid, 2 * MINUTE);

  await h.pods.create(ns, { metadata: { name: 'same' }, spec: spec() });
  const fresh = await h.pods.waitFor(
    ns,
    'same',
    (p) => p.metadata?.uid !== oldRef.uid && isRunningAndReady(p),
    {
      timeoutMs: 2 * MINUTE,
      what: 'the new pod of the same name Running',
    },
  );
  const freshRef = refOf(fresh);

  // Every event of the old pod, delivered again late (EventBridge may deliver long after).
  const late = h.deployment.bus.published.filter((e) => JSON.stringify(e.detail).includes(oldRef.uid));
  assert.ok(late.length > 0, 'the old pod had events to replay');
  for (let i = 0; i < late.length; i += 10) {
    await h.deployment.bus.putEvents(
      late.slice(i, i + 10).map((e) => ({
        Source: POD_EVENT_SOURCE,
        DetailType: POD_EVENT_DETAIL_TYPE,
        Detail: JSON.stringify(e.detail),
      })),
    );
  }
  await h.deployment.bus.whenIdle();

  const after = await h.pods.read(ns, 'same');
  assert.equal(after?.metadata?.uid, freshRef.uid);
  assert.equal(after?.metadata?.deletionTimestamp, undefined, 'the new pod is not being deleted');
  assert.ok(after && isRunningAndReady(after));
  const history = await h.probe.history(freshRef);
  assert.equal(history?.creates, 1);
  assert.equal(history?.deletes, 0, 'the late delete of the old pod did not touch the new one');
  assert.equal(history?.running, true);
}

async function dangling(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('dangling');
  await h.pods.create(ns, {
    metadata: { name: 'real' },
    spec: h.pods.spec({ containers: [shell('main', 'sleep 3600')] }),
  });
  const real = await h.pods.waitFor(ns, 'real', isRunningAndReady, {
    timeoutMs: 2 * MINUTE,
    what: 'pod real Running',
  });
  const ghost: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: ns, name: 'ghost', uid: randomUUID() },
    spec: {
      nodeName: h.node,
      restartPolicy: 'Always',
      containers: [{ name: 'main', image: h.provider.image, command: ['sleep', '3600'] }],
    },
  };
  const ghostRef = refOf(ghost);
  await h.probe.injectPod(ghost);
  assert.ok(
    (await h.probe.pods(h.node)).some((p) => p.uid === ghostRef.uid),
    'the ghost is in the provider',
  );
  await providerLetGo(h, ghostRef, 2 * MINUTE);
  const realHistory = await h.probe.history(refOf(real));
  assert.deepEqual(
    realHistory && [realHistory.creates, realHistory.deletes, realHistory.running],
    [1, 0, true],
    'the real pod is untouched',
  );
  assert.equal((await h.pods.read(ns, 'real'))?.status?.phase, 'Running');
}
