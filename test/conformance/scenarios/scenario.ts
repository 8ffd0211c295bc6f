import { it, type TestContext } from 'node:test';
import type { PipelineHarness } from '../../harness/pipeline-harness.ts';
import type { ProviderSetup, ScenarioId } from '../../harness/provider-setup.ts';

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
