import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { mapSettledLimit } from '../../../lib/util/map-limit.ts';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import type { PodRef } from '../../harness/provider-setup.ts';
import { waitFor } from '../../support/kube.ts';
import { isRunningAndReady, refOf } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;
const BURST = 30;
/**
 * Exits on SIGTERM, so that a pod stops as soon as pod-sync's delete reaches
 * the provider, while the rest of the burst is still being deleted. (A
 * process that leaves SIGTERM to its default, as `sleep` does as a
 * container's PID 1, would stop only when the grace period ends.)
 */
const STOPS_ON_TERM = "trap 'exit 0' TERM; sleep 3600 & wait";

/** Every function SIGKILLed mid-burst, twice: while pods are created, and while they are deleted. */
export function restartScenario(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'restart-mid-burst',
    `every function SIGKILLed mid-burst (${BURST} creates, then ${BURST} deletes): nothing lost, nothing created twice`,
    10 * MINUTE,
    restartMidBurst,
  );
}

/**
 * Pod-sync invocations running at the kill: more than one, so that the kill
 * ends at least one mid-invocation even if another had just finished and its
 * result was still on its way to the runtime.
 */
const RUNNING_AT_KILL = 2;

/** After this long without {@link RUNNING_AT_KILL} at once, one running invocation is enough to kill. */
const ALONE_AFTER_MS = 30_000;

/**
 * Kills every function mid-burst: once the provider visibly acted on the
 * burst (`acted`, which stays true once it holds: a pod in the provider, a
 * pod stopped), and then the moment pod-sync has {@link RUNNING_AT_KILL}
 * invocations running. The first holds while most of the burst's work is
 * still to come (one pod of 29), so pod-sync is busy when it does; between
 * the second check and the kill only the runtime's own counters are read (no
 * request), so nothing can finish in between. On a loaded machine the
 * burst's events may trickle in so that pod-sync runs one invocation at a
 * time: after {@link ALONE_AFTER_MS} one is enough, and a kill that ended
 * none (it had just finished) is followed by another, until one ends an
 * invocation or the burst's time is up. Returns how many pod-sync
 * invocations the kills ended.
 */
async function killMidBurst(
  h: PipelineHarness,
  what: string,
  acted: () => Promise<boolean>,
): Promise<number> {
  const { runtime } = h.deployment;
  await waitFor(acted, { timeoutMs: 3 * MINUTE, intervalMs: 100, what: `the provider to act on ${what}` });
  const deadline = Date.now() + 3 * MINUTE;
  for (let kills = 1; ; kills++) {
    const since = Date.now();
    const enough = () => (Date.now() - since < ALONE_AFTER_MS ? RUNNING_AT_KILL : 1);
    await waitFor(() => runtime.runningCount('pod-sync') >= enough(), {
      timeoutMs: Math.max(deadline - Date.now(), 1),
      intervalMs: 10,
      what: `pod-sync invocations running for ${what} (${kills - 1} kills ended none)`,
    });
    const before = h.invocations.count('pod-sync', 'error:Runtime.ExitError');
    await h.killFunctions();
    // The runtime reports each killed invocation as it learns of the exit.
    await waitFor(
      () =>
        runtime.runningCount('pod-sync') === 0 ||
        h.invocations.count('pod-sync', 'error:Runtime.ExitError') > before,
      {
        timeoutMs: 10_000,
        what: 'the killed pod-sync invocations to be reported',
      },
    );
    const ended = h.invocations.count('pod-sync', 'error:Runtime.ExitError') - before;
    if (ended > 0 || Date.now() >= deadline) return ended;
  }
}

/**
 * Each half of the burst starts with one pod alone, seen through to the
 * provider (created; stopped), so that the pipeline is at work on the burst
 * before the other 29 follow at once; the kill comes once the provider acted
 * on one of those 29 too.
 */
async function restartMidBurst(h: PipelineHarness, t: TestContext): Promise<void> {
  const ns = await h.namespace('burst');
  const deadLettersBefore = h.deployment.bus.deadLetters.length;
  const [lead = 'b0', ...rest] = Array.from({ length: BURST }, (_, i) => `b${i}`);
  const inProvider = async () => (await h.probe.pods(h.node)).filter((p) => p.namespace === ns);
  const anyIn = (names: string[]) => async () => (await inProvider()).some((p) => names.includes(p.name));
  // A pod that was in the provider and is no longer listed stopped too.
  const anyStopped = (names: string[]) => async () => {
    const running = new Set((await inProvider()).filter((p) => p.running).map((p) => p.name));
    return names.some((name) => !running.has(name));
  };
  const create = (name: string) =>
    h.pods.create(ns, {
      metadata: { name },
      spec: h.pods.spec({ terminationGracePeriodSeconds: 5, containers: [shell('main', STOPS_ON_TERM)] }),
    });

  await create(lead);
  await waitFor(anyIn([lead]), {
    timeoutMs: 2 * MINUTE,
    intervalMs: 250,
    what: `pod ${lead} in the provider`,
  });
  const creating = mapSettledLimit(rest, 10, create);
  const killedCreating = await killMidBurst(h, `the burst's ${rest.length} creates`, anyIn(rest));
  const createdAtKill = (await inProvider()).length;
  const created = await creating;
  assert.deepEqual(
    created.filter((c) => c.status === 'rejected'),
    [],
    'every create accepted by the API server',
  );
  assert.ok(killedCreating > 0, 'the kill ended pod-sync invocations in flight');

  const refs = await allRunning(h, ns);
  await assertHistories(h, refs, { creates: 1, deletes: 0 });

  await h.pods.delete(ns, lead);
  await waitFor(anyStopped([lead]), { timeoutMs: 2 * MINUTE, intervalMs: 250, what: `pod ${lead} stopped` });
  const deleting = mapSettledLimit(rest, 10, (name) => h.pods.delete(ns, name));
  const killedDeleting = await killMidBurst(h, `the burst's ${rest.length} deletes`, anyStopped(rest));
  const runningAtKill = (await inProvider()).filter((p) => p.running).length;
  assert.ok(killedDeleting > 0, 'the kill ended pod-sync invocations in flight');
  const deleted = await deleting;
  assert.deepEqual(
    deleted.filter((d) => d.status === 'rejected'),
    [],
    'every delete accepted by the API server',
  );
  await waitFor(async () => (await h.pods.list(ns)).length === 0 && (await inProvider()).length === 0, {
    timeoutMs: 4 * MINUTE,
    intervalMs: 1_000,
    what: 'every pod gone from the API server and the provider',
  });
  await assertHistories(h, refs, { creates: 1, deletes: 1 });
  t.diagnostic(
    `kills with ${createdAtKill} of ${BURST} pods in the provider, then ${runningAtKill} still running, ending ` +
      `${killedCreating} and ${killedDeleting} pod-sync invocations; cold starts ${h.deployment.host?.coldStarts}; ` +
      `dead letters during the scenario ${h.deployment.bus.deadLetters.length - deadLettersBefore}`,
  );
}

/** Waits for all of the burst Running after the kill; the provider must run exactly those pods. */
async function allRunning(h: PipelineHarness, ns: string): Promise<PodRef[]> {
  await waitFor(async () => (await h.pods.list(ns)).filter(isRunningAndReady).length === BURST, {
    timeoutMs: 4 * MINUTE,
    intervalMs: 1_000,
    what: `all ${BURST} pods Running after the kill`,
  });
  const pods = await h.pods.list(ns);
  const refs = pods.map(refOf);
  assert.equal(pods.filter((p: V1Pod) => p.status?.phase === 'Failed').length, 0, 'no pod reported lost');
  const held = (await h.probe.pods(h.node)).filter((p) => p.namespace === ns);
  assert.deepEqual(
    held.map((p) => p.uid).sort(),
    refs.map((r) => r.uid).sort(),
    'the provider runs exactly these pods',
  );
  return refs;
}

/** Every uid's history, where the provider still has one, shows exactly these counts. */
async function assertHistories(
  h: PipelineHarness,
  refs: PodRef[],
  expected: { creates: number; deletes: number },
) {
  const histories = await Promise.all(refs.map(async (r) => ({ r, history: await h.probe.history(r) })));
  const wrong = histories.filter(
    ({ history }) =>
      history && (history.creates !== expected.creates || history.deletes !== expected.deletes),
  );
  assert.deepEqual(
    wrong.map(({ r, history }) => `${r.name}: ${history?.creates} creates, ${history?.deletes} deletes`),
    [],
    `every pod created ${expected.creates} and deleted ${expected.deletes} time(s) in the provider`,
  );
}
