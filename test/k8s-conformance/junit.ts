/**
 * Reads the JUnit reports e2e.test writes (`--report-dir`, one
 * `junit_NN.xml` per ginkgo node, by ginkgo v1's JUnitReporter through Go's
 * encoding/xml): a `<testcase name classname time>` per spec, holding
 * `<failure type>` and `<system-out>` (the spec's captured log) when it
 * failed, `<passed>` (its log, with -ginkgo.reportPassed) when it passed,
 * `<skipped>` when the node did not run it. That format is all it
 * reads, so a few expressions do instead of an XML library.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type SpecState = 'passed' | 'failed' | 'skipped';

export interface SpecResult {
  /** The spec's full text, as ginkgo's focus matches it. */
  name: string;
  state: SpecState;
  seconds: number;
  /** The failure message (failed only). */
  failure?: string;
  /** The spec's captured log (failed, and passed with -ginkgo.reportPassed). */
  output?: string;
}

const TESTCASE = /<testcase\s([^>]*)>([\s\S]*?)<\/testcase>/g;
const ATTRIBUTE = /(\w+)="([^"]*)"/g;

/** The specs of one report, in its order. */
export function parseJunit(xml: string): SpecResult[] {
  const results: SpecResult[] = [];
  for (const [, attributes = '', body = ''] of xml.matchAll(TESTCASE)) {
    const attrs = Object.fromEntries(
      [...attributes.matchAll(ATTRIBUTE)].map(([, k, v]) => [k, xmlText(v ?? '')]),
    );
    const failure = /<failure[^>]*>([\s\S]*?)<\/failure>/.exec(body)?.[1];
    // A failed spec's log is its system-out; a passed one's (with -ginkgo.reportPassed) its `passed` element.
    const output = /<(system-out|passed)>([\s\S]*?)<\/\1>/.exec(body)?.[2];
    const skipped = /<skipped\b/.test(body);
    results.push({
      name: attrs.name ?? '',
      state: failure !== undefined ? 'failed' : skipped ? 'skipped' : 'passed',
      seconds: Number(attrs.time ?? 0),
      ...(failure !== undefined ? { failure: xmlText(failure) } : {}),
      ...(output !== undefined ? { output: xmlText(output) } : {}),
    });
  }
  return results;
}

/**
 * Every node's report in `dir`, merged by spec: a spec ran on one node and
 * is skipped on the others, so a failure anywhere wins over a pass, and a
 * pass over a skip.
 */
export function readJunitReports(dir: string): Map<string, SpecResult> {
  const merged = new Map<string, SpecResult>();
  const rank: Record<SpecState, number> = { skipped: 0, passed: 1, failed: 2 };
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /^junit_.*\.xml$/.test(f));
  } catch {
    return merged;
  }
  for (const file of files.sort()) {
    for (const result of parseJunit(readFileSync(join(dir, file), 'utf8'))) {
      const seen = merged.get(result.name);
      if (!seen || rank[result.state] > rank[seen.state]) merged.set(result.name, result);
    }
  }
  return merged;
}

/** Go's encoding/xml escapes: the five named entities and numeric references (&#34; &#xA;...). */
function xmlText(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number(entity.slice(1)));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[entity] ?? '';
  });
}
