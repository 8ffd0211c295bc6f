import { after, before, describe } from 'node:test';
import { PipelineHarness, type PipelineHarnessOptions } from '../harness/pipeline-harness.ts';
import type { ProviderSetup } from '../harness/provider-setup.ts';
import { testEnv } from '../support/env.ts';
import { commandAndDeadlineScenarios } from './scenarios/command-and-deadline.ts';
import { deletionScenarios } from './scenarios/deletion.ts';
import { lifecycleScenarios } from './scenarios/lifecycle.ts';
import { podExtrasScenarios } from './scenarios/pod-extras.ts';
import { podShapeScenarios } from './scenarios/pod-shape.ts';
import { probeScenarios } from './scenarios/probes.ts';
import { restartScenario } from './scenarios/restart.ts';
import type { ConformanceContext } from './scenarios/scenario.ts';
import { serviceAccountTokenScenarios } from './scenarios/service-account-token.ts';
import { volumeScenarios } from './scenarios/volumes.ts';

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
    commandAndDeadlineScenarios(ctx);
    volumeScenarios(ctx);
    podExtrasScenarios(ctx);
    serviceAccountTokenScenarios(ctx);
  });
  describe(`provider conformance: ${setup.name}, every function killed`, () => {
    restartScenario(ctx);
  });
}
