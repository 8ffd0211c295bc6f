/**
 * Which specs a run takes: the [NodeConformance] specs of e2e.test v1.20.2
 * that are neither serial, disruptive, flaky, slow nor behind a feature gate
 * (143 of them, in test/e2e/common), listed by e2e.test itself in a dry run,
 * narrowed by the caller's own expression; and the ginkgo focus that runs
 * exactly those.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJunitReports } from './junit.ts';

export const NODE_CONFORMANCE_FOCUS = String.raw`\[NodeConformance\]`;
export const NODE_CONFORMANCE_SKIP = String.raw`\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:`;

/** Every spec e2e.test would run with the tier's focus and skip, by full text, in e2e.test's order. */
export function listNodeConformanceSpecs(e2eTest: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'svk-k8s-specs-'));
  try {
    const run = spawnSync(
      e2eTest,
      [
        '--ginkgo.dryRun',
        '--ginkgo.noColor',
        `--ginkgo.focus=${NODE_CONFORMANCE_FOCUS}`,
        `--ginkgo.skip=${NODE_CONFORMANCE_SKIP}`,
        `--report-dir=${dir}`,
      ],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
    );
    const specs = [...readJunitReports(dir).values()].filter((r) => r.state !== 'skipped').map((r) => r.name);
    if (specs.length === 0) {
      throw new Error(
        `e2e.test --ginkgo.dryRun listed no spec (exit ${run.status}): ${(run.stderr || run.stdout).slice(-2000)}`,
      );
    }
    return specs;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A Go (RE2) regular expression that matches exactly the given spec texts,
 * for ginkgo's -focus: ginkgo v1 matches it against the suite's description
 * and the texts of the spec's containers from the root one, `[Top Level]`,
 * and its own, joined by spaces.
 */
export function exactFocus(names: readonly string[]): string {
  return `\\[Top Level\\] (?:${names.map(quoteMeta).join('|')})$`;
}

/** Go's regexp.QuoteMeta. */
export function quoteMeta(text: string): string {
  return text.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}
