/**
 * Small files and short functions: no source file over 400 lines and no
 * function over 80 lines outside bench/ and the tests. A function is
 * measured by the lines its body spans (TypeScript's own parser: functions,
 * methods, constructors, accessors and arrow functions; a nested function
 * counts within its parent too).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { filesUnder, functionSizes, ROOT } from '../support/source-graph.ts';

const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;

/** What the limits apply to: the code that ships or runs the project, not bench/ or test/. */
const SOURCE_DIRS = ['functions', 'lib', 'scripts'];

/**
 * Functions allowed over the limit, by `path name`, each with why it is not
 * cut. Keep it short: an entry that no longer exceeds the limit fails the
 * test until it is removed.
 */
const LONG_FUNCTIONS: Record<string, string> = {
  'lib/kubelet-api/metrics-resource.ts resourceMetrics':
    'the eight metric families, the samples and the text in one pass; the kubelet API work owns this file and cuts it (families apart from sampling and rendering)',
};

/** Files allowed over the limit, by path, each with why it is not cut. */
const LONG_FILES: Record<string, string> = {};

const sources = SOURCE_DIRS.flatMap((dir) => filesUnder(dir, ['.ts', '.sh']));
const lineCount = (path: string) =>
  readFileSync(join(ROOT, path), 'utf8').replace(/\n$/, '').split('\n').length;

describe('source size limits (outside bench/ and tests)', () => {
  it('finds the sources', () => {
    assert.ok(sources.includes('functions/heartbeat.ts'), 'functions/ is scanned');
    assert.ok(sources.includes('lib/app/dependencies.ts'), 'lib/ is scanned');
    assert.ok(sources.includes('scripts/test.sh'), 'scripts/ is scanned');
  });

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = sources
      .map((path) => ({ path, lines: lineCount(path) }))
      .filter(({ path, lines }) => lines > MAX_FILE_LINES && !(path in LONG_FILES))
      .map(({ path, lines }) => `${path}: ${lines} lines`);
    assert.deepEqual(long, [], 'cut each along its seams (one idea per file)');
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = sources
      .filter((path) => path.endsWith('.ts'))
      .flatMap(functionSizes)
      .filter((f) => f.lines > MAX_FUNCTION_LINES && !(`${f.path} ${f.name}` in LONG_FUNCTIONS))
      .map((f) => `${f.path}:${f.line} ${f.name}: ${f.lines} lines`);
    assert.deepEqual(long, [], 'split each into named steps');
  });

  it('keeps only exceptions that are still over the limit', () => {
    const sizes = new Map(
      sources
        .filter((path) => path.endsWith('.ts'))
        .flatMap(functionSizes)
        .map((f) => [`${f.path} ${f.name}`, f.lines]),
    );
    for (const key of Object.keys(LONG_FUNCTIONS))
      assert.ok((sizes.get(key) ?? 0) > MAX_FUNCTION_LINES, `${key} is within the limit: drop its exception`);
    for (const path of Object.keys(LONG_FILES))
      assert.ok(sources.includes(path) && lineCount(path) > MAX_FILE_LINES, `${path}: drop its exception`);
  });
});
