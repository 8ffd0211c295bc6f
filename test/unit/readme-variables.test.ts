/**
 * Every environment variable the configuration reads (lib/config and each
 * provider's settings module) has its row in one of the configuration
 * tables of docs/ (first cell, as a code span), and every row names a
 * variable the code reads. A variable added to the code fails this test
 * until the documents have it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { doc } from '../support/readme.ts';
import { ROOT } from '../support/source-graph.ts';

const VARIABLE = /\bSVK_[A-Z0-9]+(?:_[A-Z0-9]+)*\b/g;

/** The files that define the functions' environment variables. */
function configSources(): string[] {
  const config = readdirSync(join(ROOT, 'lib/config'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join('lib/config', f));
  const providers = readdirSync(join(ROOT, 'lib/provider'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => join('lib/provider', d.name, 'settings.ts'));
  return [...config, ...providers];
}

/** Variables named in the given files (code or comments). */
function variablesIn(files: readonly string[]): Set<string> {
  const found = new Set<string>();
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(join(ROOT, file), 'utf8');
    } catch {
      continue; // a provider without a settings module
    }
    for (const name of text.matchAll(VARIABLE)) found.add(name[0]);
  }
  return found;
}

/** Every TypeScript file under `dir`, relative to the root. */
function tsFilesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** The documents that hold the configuration tables: the functions' own, and each provider's. */
const CONFIGURATION_DOCS = ['docs/configuration.md', 'docs/providers/ecs-fargate.md'];

/** Variables that head a configuration table row: `| \`SVK_...\` | ...`. */
function variablesInTables(): Set<string> {
  const found = new Set<string>();
  for (const row of CONFIGURATION_DOCS.map(doc)
    .join('\n')
    .matchAll(/^\| `(SVK_[A-Z0-9_]+)` \|/gm))
    found.add(row[1] ?? '');
  return found;
}

describe('the configuration tables of docs/', () => {
  const code = variablesIn(configSources());
  // What the rest of the code reads besides the functions' configuration (npm start, the status command).
  const read = variablesIn(['lib', 'functions', 'scripts'].flatMap(tsFilesUnder));
  const documented = variablesInTables();

  it('finds the variables of the code and of the documents', () => {
    assert.ok(code.has('SVK_PROVIDER') && code.has('SVK_TABLE_NAME'), [...code].join(', '));
    assert.ok(documented.has('SVK_PROVIDER'), [...documented].join(', '));
  });

  it('has a row for every variable the configuration reads', () => {
    assert.deepEqual(
      [...code].filter((v) => !documented.has(v)).sort(),
      [],
      "add a row for each to a configuration table: docs/configuration.md, or the provider's document",
    );
  });

  it('documents no variable the configuration does not read', () => {
    assert.deepEqual(
      [...documented].filter((v) => !read.has(v)).sort(),
      [],
      'remove each row from docs/, or read the variable',
    );
  });
});
