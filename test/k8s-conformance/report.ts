/**
 * What a run found, spec by spec, and the lines that say it: every spec
 * that did not pass with a one-line cause, then `N passed, M failed, K not
 * runnable here`. A spec that was selected but has no result (the run was
 * cut by its time bound or interrupted) counts as failed, never as passed.
 */
import type { SpecResult } from './junit.ts';

export type Verdict = 'passed' | 'failed' | 'not runnable here';

export interface SpecOutcome {
  name: string;
  verdict: Verdict;
  /** Why it did not pass (failed, not runnable here). */
  cause?: string;
  seconds?: number;
}

export interface RunFacts {
  /** Selected specs that were run. */
  run: readonly string[];
  /** Selected specs left out because their image cannot exist here, with why. */
  notRunnable: ReadonlyMap<string, string>;
  /** The merged JUnit reports. */
  results: ReadonlyMap<string, SpecResult>;
  /** What e2e.test's progress reporter said as specs ended (for a run whose reports were not written). */
  streamed: ReadonlyMap<string, 'passed' | 'failed'>;
  /** Why specs without any result did not run, e.g. "the run's 60-minute bound was reached". */
  unfinished: string;
}

export function outcomes(facts: RunFacts): SpecOutcome[] {
  const list: SpecOutcome[] = [];
  for (const name of facts.run) {
    const result = facts.results.get(name);
    if (result && result.state !== 'skipped') {
      list.push({
        name,
        verdict: result.state,
        seconds: result.seconds,
        ...(result.state === 'failed' ? { cause: failureCause(result) } : {}),
      });
      continue;
    }
    const streamed = facts.streamed.get(name);
    if (streamed === 'passed') list.push({ name, verdict: 'passed' });
    else if (streamed === 'failed')
      list.push({ name, verdict: 'failed', cause: 'failed (no report written: see ginkgo.log)' });
    else list.push({ name, verdict: 'failed', cause: `not run: ${facts.unfinished}` });
  }
  for (const [name, why] of facts.notRunnable) list.push({ name, verdict: 'not runnable here', cause: why });
  return list;
}

/** `N passed, M failed, K not runnable here`. */
export function figure(list: readonly SpecOutcome[]): string {
  const count = (v: Verdict) => list.filter((o) => o.verdict === v).length;
  return `${count('passed')} passed, ${count('failed')} failed, ${count('not runnable here')} not runnable here`;
}

const REFUSAL = /ProviderFailed: the docker provider cannot run this pod: ([^\n]*)/;
const MAX_CAUSE = 400;

/**
 * One line saying why a spec failed: the provider's refusal when the
 * namespace's events (which the framework dumps on failure) hold one, else
 * the failure message, its gomega "Unexpected error" wrapping taken off.
 */
export function failureCause(result: SpecResult): string {
  const refusal = REFUSAL.exec(result.output ?? '')?.[1];
  if (refusal) return clip(`refused by the provider: ${refusal}`);
  const message = (result.failure ?? 'failed without a message').replace(/\s+/g, ' ').trim();
  const wrapped = /^Unexpected error: .*?[>}] (.*?) occurred$/.exec(message)?.[1];
  return clip(wrapped ?? message);
}

function clip(text: string): string {
  return text.length > MAX_CAUSE ? `${text.slice(0, MAX_CAUSE - 1)}…` : text;
}
