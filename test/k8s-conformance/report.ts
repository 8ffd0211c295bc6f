/**
 * What a run found, spec by spec, and the lines that say it: every spec
 * that did not pass with a one-line cause, then `N passed, M failed, K not
 * runnable here`. A spec that was selected but has no result (the run was
 * cut by its time bound or interrupted) counts as failed, never as passed.
 */
import type { SpecResult } from './junit.ts';
import { specNamespaces } from './refusals.ts';

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
  /** Namespaces where the provider refused a pod, with its reasons (refusals.ts). */
  refused: ReadonlyMap<string, string>;
}

export function outcomes(facts: RunFacts): SpecOutcome[] {
  const list: SpecOutcome[] = [];
  for (const name of facts.run) {
    const result = facts.results.get(name);
    if (result && result.state !== 'skipped') {
      const refusal = result.state === 'passed' ? refusedIn(result, facts.refused) : undefined;
      list.push({
        name,
        verdict: refusal ? 'failed' : result.state,
        seconds: result.seconds,
        ...(refusal ? { cause: clip(`passed only because the provider refused its pod: ${refusal}`) } : {}),
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

function refusedIn(result: SpecResult, refused: ReadonlyMap<string, string>): string | undefined {
  return specNamespaces(result.output ?? '')
    .map((ns) => refused.get(ns))
    .find((reasons) => reasons !== undefined);
}

/** `N passed, M failed, K not runnable here`. */
export function figure(list: readonly SpecOutcome[]): string {
  const count = (v: Verdict) => list.filter((o) => o.verdict === v).length;
  return `${count('passed')} passed, ${count('failed')} failed, ${count('not runnable here')} not runnable here`;
}

const REFUSAL = /Provider\w*Failed: the docker provider cannot run this pod: ([^\n]*)/;
const MAX_CAUSE = 400;

/**
 * One line saying why a spec failed: the provider's refusal when the
 * namespace's events (which the framework dumps on failure) hold one, else
 * the failure message without its code locations and, for an unexpected
 * error, without gomega's dump of the error value.
 */
export function failureCause(result: SpecResult): string {
  const refusal = REFUSAL.exec(result.output ?? '')?.[1];
  if (refusal) return clip(`refused by the provider: ${refusal}`);
  const lines = (result.failure ?? 'failed without a message')
    .split('\n')
    .filter((line) => !/^\S+\.go:\d+$/.test(line.trim()))
    // The framework's timestamp before the message (`Dec  6 06:08:12.002: `).
    .map((line) => line.replace(/^[A-Z][a-z]{2} +\d+ [\d:.]+: /, ''));
  return clip(oneLine(unexpectedError(lines) ?? lines));
}

/**
 * gomega's "Unexpected error:" message: the error value dumped (`<type | address>: {`
 * ... a line `    }`), then the error's own text, then `occurred`. Its own text, or undefined.
 */
function unexpectedError(lines: readonly string[]): string[] | undefined {
  const start = lines.findIndex((line) => line.trim() === 'Unexpected error:');
  const end = lines.lastIndexOf('occurred');
  if (start < 0 || end < start) return undefined;
  const dumpEnd = lines.slice(start, end).findLastIndex((line) => /^ {4}}$/.test(line));
  return lines.slice(dumpEnd < 0 ? end - 1 : start + dumpEnd + 1, end);
}

function oneLine(lines: readonly string[]): string {
  return lines.join(' ').replace(/\s+/g, ' ').trim();
}

function clip(text: string): string {
  return text.length > MAX_CAUSE ? `${text.slice(0, MAX_CAUSE - 1)}…` : text;
}
