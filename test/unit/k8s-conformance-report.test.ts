import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseJunit, readJunitReports, type SpecResult } from '../k8s-conformance/junit.ts';
import { NOT_RUNNABLE, notRunnableHere, staleEntries } from '../k8s-conformance/not-runnable.ts';
import { refusedNamespaces } from '../k8s-conformance/refusals.ts';
import { failureCause, figure, outcomes } from '../k8s-conformance/report.ts';
import { exactFocus, quoteMeta } from '../k8s-conformance/specs.ts';

/** A report as ginkgo v1's JUnitReporter writes it through Go's encoding/xml. */
const REPORT = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuite name="Kubernetes e2e suite" tests="3" failures="1" errors="0" time="12.5">
      <testcase name="[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" time="3.25"><passed>STEP: Destroying namespace &#34;pods-1&#34; for this suite.</passed></testcase>
      <testcase name="[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" time="2.1"><failure type="Failure">/go/util.go:738&#xA;Unexpected error:&#xA;    &lt;*errors.errorString | 0xc0005534c0&gt;: {&#xA;        s: &#34;expected pod &#34;,&#xA;    }&#xA;    expected pod &#34;p&#34; success: pod &#34;p&#34; failed&#xA;occurred</failure><system-out>STEP: Found 2 events.&#xA;INFO: At 2026 - event for p: {serverless-virtual-kubelet n} ProviderCreateFailed: the docker provider cannot run this pod: spec.volumes[cm]: only emptyDir volumes are supported, not configMap&#xA;INFO: done</system-out></testcase>
      <testcase name="[k8s.io] Probing container should be restarted [NodeConformance]" classname="Kubernetes e2e suite" time="0"><skipped></skipped></testcase>
  </testsuite>`;

describe('the node conformance JUnit reports', () => {
  it('reads each spec with its state, time, failure and captured output, entities decoded', () => {
    const [passed, failed, skipped] = parseJunit(REPORT);
    assert.deepEqual(passed, {
      name: '[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]',
      state: 'passed',
      seconds: 3.25,
      output: 'STEP: Destroying namespace "pods-1" for this suite.',
    });
    assert.equal(failed?.state, 'failed');
    assert.match(failed?.failure ?? '', /^\/go\/util.go:738\nUnexpected error:\n {4}<\*errors/);
    assert.match(failed?.output ?? '', /not configMap\nINFO: done$/);
    assert.equal(skipped?.state, 'skipped');
  });

  it("merges the nodes' reports: a spec ran on one node and is skipped on the others", () => {
    const dir = mkdtempSync(join(tmpdir(), 'junit-'));
    try {
      const testcase = (name: string, body: string) =>
        `<testcase name="${name}" classname="s" time="1">${body}</testcase>`;
      writeFileSync(join(dir, 'junit_01.xml'), testcase('a', '') + testcase('b', '<skipped></skipped>'));
      writeFileSync(
        join(dir, 'junit_02.xml'),
        testcase('a', '<skipped></skipped>') + testcase('b', '<failure>x</failure>'),
      );
      writeFileSync(join(dir, 'other.xml'), testcase('c', ''));
      const merged = readJunitReports(dir);
      assert.deepEqual(
        [...merged.values()].map((r) => [r.name, r.state]),
        [
          ['a', 'passed'],
          ['b', 'failed'],
        ],
      );
      assert.equal(readJunitReports(join(dir, 'missing')).size, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what a run reports', () => {
  const failedResult = parseJunit(REPORT)[1] as SpecResult;

  it("names the provider's refusal when the namespace's events hold one", () => {
    assert.equal(
      failureCause(failedResult),
      'refused by the provider: spec.volumes[cm]: only emptyDir volumes are supported, not configMap',
    );
  });

  it("takes gomega's wrapping off an unexpected error, and keeps any other message on one line", () => {
    const { output: _, ...withoutEvents } = failedResult;
    assert.equal(failureCause(withoutEvents), 'expected pod "p" success: pod "p" failed');
    assert.equal(
      failureCause({
        name: 'x',
        state: 'failed',
        seconds: 1,
        failure: 'Timed out after 150.000s.\nExpected\n  <bool>: false',
      }),
      'Timed out after 150.000s. Expected <bool>: false',
    );
  });

  it('counts a selected spec without a result as failed, never as passed, and says why', () => {
    const list = outcomes({
      run: ['a', 'b', 'c', 'd', 'e'],
      notRunnable: new Map([['n', 'its image is not available here']]),
      results: new Map<string, SpecResult>([
        [
          'a',
          {
            name: 'a',
            state: 'passed',
            seconds: 1,
            output: 'STEP: Destroying namespace "ns-a" for this suite.',
          },
        ],
        [
          'e',
          {
            name: 'e',
            state: 'passed',
            seconds: 1,
            output: 'STEP: Destroying namespace "ns-e" for this suite.',
          },
        ],
      ]),
      streamed: new Map([
        ['b', 'passed'],
        ['c', 'failed'],
      ]),
      unfinished: "the run's 10-minute bound was reached",
      refused: new Map([['ns-e', 'spec.containers[c].readinessProbe: probes are not run by this provider']]),
    });
    assert.deepEqual(
      list.map((o) => [o.name, o.verdict, o.cause]),
      [
        ['a', 'passed', undefined],
        ['b', 'passed', undefined],
        ['c', 'failed', 'failed (no report written: see ginkgo.log)'],
        ['d', 'failed', "not run: the run's 10-minute bound was reached"],
        [
          'e',
          'failed',
          'passed only because the provider refused its pod: spec.containers[c].readinessProbe: probes are not run by this provider',
        ],
        ['n', 'not runnable here', 'its image is not available here'],
      ],
    );
    assert.equal(figure(list), '2 passed, 3 failed, 1 not runnable here');
  });

  it("reads the provider's refusals by namespace from the node's log, skipping other lines", () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-log-'));
    try {
      const log = join(dir, 'node.log');
      const refusal = {
        level: 'warn',
        pod: 'probe-1/p',
        err: { type: 'ProviderUnsupportedError', reasons: ['a: no', 'b: no'] },
      };
      writeFileSync(
        log,
        [
          JSON.stringify(refusal),
          '[node] ProviderUnsupportedError text',
          JSON.stringify({ pod: 'x/y' }),
        ].join('\n'),
      );
      assert.deepEqual([...refusedNamespaces(log)], [['probe-1', 'a: no; b: no']]);
      assert.equal(refusedNamespaces(join(dir, 'missing.log')).size, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('which specs a run takes', () => {
  it("focuses ginkgo on exactly the named specs, after the root container's text", () => {
    assert.equal(quoteMeta('a [b] (c) d.e*f|g$'), String.raw`a \[b\] \(c\) d\.e\*f\|g\$`);
    assert.equal(exactFocus(['x [y]', 'z']), String.raw`\[Top Level\] (?:x \[y\]|z)$`);
  });

  it('tells the specs whose image cannot exist here, and entries that name no spec', () => {
    const spec = '[k8s.io] Pods should be updated [NodeConformance] [Conformance]';
    assert.match(notRunnableHere(spec) ?? '', /nginx/);
    assert.equal(
      notRunnableHere('[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]'),
      undefined,
    );
    assert.equal(staleEntries([spec]).length, NOT_RUNNABLE.length - 1);
  });
});
