import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { shell } from '../../harness/harness-pods.ts';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import { testEnv } from '../../support/env.ts';
import { waitFor } from '../../support/kube.ts';
import { containerStatus, isRunningAndReady, ms, refOf } from './pod-facts.ts';
import { type ConformanceContext, scenario } from './scenario.ts';

const MINUTE = 60_000;

/** What the kubelet does with a pod beyond its containers' own env: `$(VAR)` in command and args, service links, the active deadline. */
export function commandAndDeadlineScenarios(ctx: ConformanceContext): void {
  scenario(
    ctx,
    'command-expansion',
    '$(VAR) in command and args is expanded from the env, service-link variables included',
    3 * MINUTE,
    commandExpansion,
  );
  scenario(
    ctx,
    'active-deadline',
    'a pod past its activeDeadlineSeconds fails with DeadlineExceeded and its containers stop; a deadline set on a running pod too',
    3 * MINUTE,
    activeDeadline,
  );
}

async function commandExpansion(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('expansion');
  const service = await h.admin.core.createNamespacedService({
    namespace: ns,
    body: { metadata: { name: 'fooservice' }, spec: { ports: [{ port: 8765, targetPort: 8080 }] } },
  });
  const ip = service.spec?.clusterIP;
  assert.ok(ip, 'the API server gave the Service a cluster IP');
  const master = await h.admin.core.readNamespacedService({ namespace: 'default', name: 'kubernetes' });
  const checks = [
    `test "$(TEST_VAR)" = test-value || exit 3`,
    `test "$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)" = "${ip}:8765" || exit 4`,
    // Where pods reach the API server (SVK_POD_API_SERVER) when the run has one, else the Service's cluster IP.
    `test "$(KUBERNETES_SERVICE_HOST)" = "${testEnv().kube.podApiServer?.split(':')[0] ?? master.spec?.clusterIP}" || exit 5`,
    `test "$(COMPOSED)" = "${ip}-composed" || exit 6`,
  ];
  // An unexpanded $(SHELL_NAME) in command would not start; under sh an unexpanded $(X) in the
  // script would be command substitution and print nothing. Each check exits with its own code.
  await h.pods.create(ns, {
    metadata: { name: 'expanded' },
    spec: h.pods.spec({
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          command: ['$(SHELL_NAME)', '-c'],
          args: [checks.join('; ')],
          env: [
            { name: 'SHELL_NAME', value: 'sh' },
            { name: 'TEST_VAR', value: 'test-value' },
            { name: 'COMPOSED', value: '$(FOOSERVICE_SERVICE_HOST)-composed' },
          ],
        },
      ],
    }),
  });
  const done = await h.pods.waitFor(
    ns,
    'expanded',
    (p) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    {
      timeoutMs: 2 * MINUTE,
      what: 'pod expanded finished',
    },
  );
  assert.equal(
    containerStatus(done, 'main')?.state?.terminated?.exitCode,
    0,
    'exit 3: $(TEST_VAR) not expanded; 4: the Service link; 5: KUBERNETES_SERVICE_HOST; 6: env composed from a link',
  );
  assert.equal(done.status?.phase, 'Succeeded');
}

/**
 * The first pod's deadline: long enough for its container to start first on a loaded box
 * (on ECS a pod's token Secret volume is written by the volume writer before it).
 */
const DEADLINE_S = 15;

async function activeDeadline(h: PipelineHarness): Promise<void> {
  const ns = await h.namespace('deadline');
  await h.pods.create(ns, {
    metadata: { name: 'bounded' },
    spec: h.pods.spec({
      activeDeadlineSeconds: DEADLINE_S,
      terminationGracePeriodSeconds: 2,
      containers: [shell('main', 'sleep 3600')],
    }),
  });
  // The e2e spec "Pods should allow activeDeadlineSeconds to be updated": a running pod gets a deadline.
  await h.pods.create(ns, {
    metadata: { name: 'updated' },
    spec: h.pods.spec({ terminationGracePeriodSeconds: 2, containers: [shell('main', 'sleep 3600')] }),
  });
  const updated = (async () => {
    await h.pods.waitFor(ns, 'updated', isRunningAndReady, {
      timeoutMs: 2 * MINUTE,
      what: 'pod updated Running',
    });
    await h.admin.core.patchNamespacedPod(
      { namespace: ns, name: 'updated', body: { spec: { activeDeadlineSeconds: 5 } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    return h.pods.waitForPhase(ns, 'updated', 'Failed', 2 * MINUTE);
  })();
  // Awaited below; an assertion failing first must not leave its rejection unhandled.
  updated.catch(() => {});
  // Not waited for Running first: on a quick pipeline the pod may be Failed before a poll sees it Running.
  const failed = await h.pods.waitForPhase(ns, 'bounded', 'Failed', 2 * MINUTE);
  assert.equal(failed.status?.reason, 'DeadlineExceeded');
  assert.equal(failed.status?.message, 'Pod was active on the node longer than the specified deadline');
  const startTime = ms(failed.status?.startTime);
  assert.ok(Number.isFinite(startTime), 'the pod has a start time');
  const terminated = containerStatus(failed, 'main')?.state?.terminated;
  assert.ok(terminated, 'its container is reported terminated');
  assert.ok(Number.isFinite(ms(terminated.startedAt)), 'its container had started');
  assert.ok(
    ms(terminated.finishedAt) >= startTime + DEADLINE_S * 1000,
    `failed ${ms(terminated.finishedAt) - startTime} ms after its start: not before its deadline`,
  );
  assert.equal(
    (await updated).status?.reason,
    'DeadlineExceeded',
    'a deadline set on a running pod takes effect',
  );
  const ref = refOf(failed);
  await waitFor(
    async () => {
      const history = await h.probe.history(ref);
      const listed = (await h.probe.pods(h.node)).some((p) => p.uid === ref.uid && p.running);
      return !history?.running && !listed;
    },
    {
      timeoutMs: MINUTE + (h.provider.forcedStopSeconds ?? 0) * 1000,
      intervalMs: 500,
      what: 'the provider to stop the pod',
    },
  );
  const after = await h.pods.read(ns, 'bounded');
  assert.equal(after?.status?.phase, 'Failed', 'nothing writes over the Failed status');
  assert.equal((await h.probe.history(ref))?.creates ?? 1, 1, 'never started again');
}
