/**
 * The "Where things are" table of docs/architecture.md holds: each row's symbol is defined
 * in the file it names, and that file is reached from the row's
 * `functions/<name>.ts` in at most two static imports, along the very path
 * the row states. The imports are read with TypeScript's own parser
 * (relative `import ... from`, `export ... from`; type-only imports run
 * nothing and do not count).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { codeSpans, doc, section, tableRows } from '../support/readme.ts';
import { definesSymbol, ROOT, reachableWithin, staticImports } from '../support/source-graph.ts';

const MAX_HOPS = 2;

/** What a newcomer must find within two hops; a function's own row joins once it exists. */
const REQUIRED = [
  'lease renewal',
  'pod creation in the provider',
  'the fencing check',
  'config validation',
  ...(existsSync(join(ROOT, 'functions/kubelet-api.ts')) ? ['kubelet API request authorization'] : []),
];

interface Claim {
  what: string;
  path: string[];
  symbol: string;
}

function claims(): Claim[] {
  const rows = tableRows(
    section(doc('docs/architecture.md'), 'Where things are: at most two imports from a function'),
  );
  return rows.map(([what = '', path = '', symbol = '']) => ({
    what,
    path: codeSpans(path),
    symbol: codeSpans(symbol)[0] ?? '',
  }));
}

describe('docs/architecture.md module map: at most two imports from functions/<name>.ts', () => {
  const all = claims();

  it('names every required place', () => {
    const named = all.map((c) => c.what);
    assert.deepEqual(
      REQUIRED.filter((what) => !named.includes(what)),
      [],
    );
  });

  for (const { what, path, symbol } of all) {
    it(`${what}: ${path.join(' → ')} defines ${symbol}`, () => {
      const [from = '', ...steps] = path;
      const to = steps.at(-1);
      assert.ok(from.startsWith('functions/') && existsSync(join(ROOT, from)), `${from} is a function`);
      assert.ok(to !== undefined && steps.length <= MAX_HOPS, `1 to ${MAX_HOPS} steps, not ${steps.length}`);
      assert.ok(definesSymbol(to, symbol), `${to} defines ${symbol}`);
      const reached = reachableWithin(from, MAX_HOPS).get(to);
      assert.ok(reached, `${to} is not within ${MAX_HOPS} imports of ${from}`);
      path.slice(1).forEach((file, i) => {
        const importer = path[i] ?? '';
        assert.ok(
          staticImports(importer).includes(file),
          `${importer} does not import ${file} (a shortest path: ${reached.join(' → ')})`,
        );
      });
    });
  }
});
