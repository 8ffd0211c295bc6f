import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseSkewOffsets, WallClockSkew } from '../support/wall-clock-skew.ts';

const run = promisify(execFile);
const invocationScope = new URL('../../lib/local/invocation-scope.ts', import.meta.url).href;

/**
 * Run in a process forked as the function host would be: prints, for
 * invocations f#1, f#2, f#3, g#1 and outside any, how far Date.now(),
 * new Date() and Date() are from the true clock (timeOrigin plus
 * performance.now(), which the skew leaves alone); then empties the file and
 * waits (with a deadline) until a new invocation reads the true clock again.
 */
const CHILD = `
import { writeFileSync } from 'node:fs';
import { runInInvocation } from ${JSON.stringify(invocationScope)};
const trueNow = () => performance.timeOrigin + performance.now();
const signal = new AbortController().signal;
const inside = (functionName, requestId) => runInInvocation({ functionName, requestId, signal }, () => ({
  now: Math.round((Date.now() - trueNow()) / 1000),
  date: Math.round((new Date().getTime() - trueNow()) / 1000),
  // Date() has whole seconds: half a second added centres its truncation.
  call: Math.round((Date.parse(Date()) + 500 - trueNow()) / 1000),
  given: new Date(0).getTime(),
  again: Math.round((Date.now() - trueNow()) / 1000),
  isDate: new Date() instanceof Date,
}));
const f1 = inside('f', '1');
const out = { f1, f2: inside('f', '2'), f3: inside('f', '3'), g1: inside('g', '1'),
  outside: Math.round((Date.now() - trueNow()) / 1000) };
writeFileSync(process.env.SVK_TEST_WALL_CLOCK_SKEW_FILE, '[]');
const deadline = performance.now() + 10000;
let n = 0;
while (inside('f', 'later' + n++).now !== 0) {
  if (performance.now() > deadline) throw new Error('the emptied file was not read within 10 s');
  await new Promise((resolve) => setTimeout(resolve, 50));
}
out.afterEmptied = 0;
console.log(JSON.stringify(out));
`;

describe('wall clocks apart between invocations (test support)', () => {
  it('reads the control file: a JSON array of whole milliseconds, empty for none', () => {
    assert.deepEqual(parseSkewOffsets(''), []);
    assert.deepEqual(parseSkewOffsets('[]'), []);
    assert.deepEqual(parseSkewOffsets('[15000, -15000]'), [15_000, -15_000]);
    assert.throws(() => parseSkewOffsets('15000'), /not an array/);
    assert.throws(() => parseSkewOffsets('[1.5]'), /offset 0 must be whole milliseconds.*got 1\.5/);
    assert.throws(() => parseSkewOffsets('[0, "30s"]'), /offset 1 .*got "30s"/);
    assert.throws(() => parseSkewOffsets('[1e12]'), /offset 0/);
    assert.throws(() => parseSkewOffsets('[15000,'), /not JSON/);
  });

  it('refuses a bad offset without touching the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skew-'));
    try {
      const skew = new WallClockSkew(dir);
      skew.set([30_000]);
      assert.throws(() => skew.set([Number.NaN]), /offset 0/);
      assert.deepEqual(parseSkewOffsets(readFileSync(skew.file, 'utf8')), [30_000]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("shifts each invocation's wall clock by the offsets in turn, and nothing else", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'skew-'));
    try {
      const skew = new WallClockSkew(dir);
      skew.set([30_000, -30_000]);
      const { execArgv = [], env = {} } = skew.hostProcess;
      const { stdout } = await run(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), ...execArgv, '--input-type=module', '-e', CHILD],
        { env: { ...process.env, ...env }, timeout: 60_000 },
      );
      const out = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
      const shifted = (s: number) => ({ now: s, date: s, call: s, given: 0, again: s, isDate: true });
      assert.deepEqual(out.f1, shifted(30), 'the first invocation of f: ahead');
      assert.deepEqual(out.f2, shifted(-30), 'the second: behind');
      assert.deepEqual(out.f3, shifted(30), 'the third: ahead again');
      assert.deepEqual(out.g1, shifted(30), 'g takes its own turns');
      assert.equal(out.outside, 0, 'outside any invocation the clock is true');
      assert.equal(out.afterEmptied, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
