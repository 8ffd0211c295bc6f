import { after, before, describe, it, type TestContext } from 'node:test';
import { PipelineHarness, type PipelineHarnessOptions } from '../harness/pipeline-harness.ts';
import type { ProviderSetup, ScenarioId } from '../harness/provider-setup.ts';
import { testEnv } from '../support/env.ts';
import { deletionScenarios } from './scenarios/deletion.ts';
import { lifecycleScenarios } from './scenarios/lifecycle.ts';
import { podShapeScenarios } from './scenarios/pod-shape.ts';
import { probeScenarios } from './scenarios/probes.ts';
import { restartScenario } from './scenarios/restart.ts';

/** What every scenario gets: the running harness (after `before`) and the provider's setup. */
export interface ConformanceContext {
  readonly setup: ProviderSetup;
  harness(): PipelineHarness;
}

/**
 * Registers a scenario: a test, or, when the provider declared it not
 * applicable, a skipped test carrying the reason (never a pass).
 */
export function scenario(
  ctx: ConformanceContext,
  id: ScenarioId,
  title: string,
  timeoutMs: number,
  body: (harness: PipelineHarness, t: TestContext) => Promise<void>,
): void {
  const reason = ctx.setup.notApplicable?.[id];
  if (reason) {
    it(`[${id}] ${title}`, { skip: `not applicable to ${ctx.setup.name}: ${reason}` }, () => {});
    return;
  }
  it(`[${id}] ${title}`, { timeout: timeoutMs }, (t) => body(ctx.harness(), t));
}

/**
 * The provider conformance suite: every scenario through the real pipeline
 * (real kube-apiserver, controller-manager and scheduler, DynamoDB Local, the
 * whole deployment in the local Lambda runtime) on one virtual node served by
 * `setup`'s provider. The independent scenarios run at once, each in its own
 * namespace; the restart scenario (every function SIGKILLed mid-burst) runs
 * alone afterwards, so that its outage delays nobody else's deadlines.
 *
 * A provider's test file is one call: `conformanceSuite(myProviderSetup())`.
 */
export function conformanceSuite(setup: ProviderSetup, options: Partial<PipelineHarnessOptions> = {}): void {
  let harness: PipelineHarness | undefined;
  const ctx: ConformanceContext = {
    setup,
    harness: () => {
      if (!harness) throw new Error('the conformance harness did not start');
      return harness;
    },
  };

  before(async () => {
    harness = await PipelineHarness.start({ environment: testEnv(), provider: setup, ...options });
  });
  after(async () => {
    await harness?.stop();
  });

  describe(`provider conformance: ${setup.name}`, { concurrency: true }, () => {
    lifecycleScenarios(ctx);
    deletionScenarios(ctx);
    podShapeScenarios(ctx);
    probeScenarios(ctx);
  });
  describe(`provider conformance: ${setup.name}, every function killed`, () => {
    restartScenario(ctx);
  });
}
