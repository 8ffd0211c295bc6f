/**
 * The documents hold together: every relative link in README.md and
 * docs/**\/*.md names a file or folder that exists, and a link with a
 * `#fragment` names a heading of the Markdown file it points to, by GitHub's
 * rules for heading anchors. The README stays a page a newcomer reads
 * through: at most 300 lines, the rest in docs/.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';
import { doc } from '../support/readme.ts';
import { ROOT } from '../support/source-graph.ts';

const README_MAX_LINES = 300;

/** README.md and every Markdown file under docs/, relative to the root. */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', ...docs.sort()];
}

/** The Markdown outside fenced code blocks and code spans, where links are links. */
function prose(markdown: string): string {
  let fenced = false;
  const kept: string[] = [];
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) kept.push(line.replace(/`[^`]*`/g, ''));
  }
  return kept.join('\n');
}

/**
 * A heading's anchor as GitHub makes it (github-slugger on the rendered
 * text): inline markup dropped, lower case, punctuation removed, spaces to
 * hyphens.
 */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings; a repeated one gets `-1`, `-2`... as on GitHub. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  return found;
}

/** The targets of the inline links of a document (`[text](target)`, images included). */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1] ?? '');
}

/** What is wrong with one link of `from`, or undefined when it resolves. */
function brokenLink(from: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: ...
  const [path = '', fragment] = target.split('#', 2);
  const file = path === '' ? from : normalize(join(dirname(from), decodeURIComponent(path)));
  if (relative(ROOT, join(ROOT, file)).startsWith('..')) return `${target}: outside the repository`;
  if (!existsSync(join(ROOT, file))) return `${target}: no such file ${file}`;
  if (fragment === undefined) return undefined;
  if (statSync(join(ROOT, file)).isDirectory() || !file.endsWith('.md')) {
    return `${target}: a #fragment on ${file}, which is no Markdown file`;
  }
  return anchors(doc(file)).has(fragment) ? undefined : `${target}: ${file} has no heading #${fragment}`;
}

describe('the documents: README.md and docs/', () => {
  const files = documents();

  it('finds the README and the documents under docs/', () => {
    assert.ok(
      files.includes('docs/architecture.md') && files.includes('docs/configuration.md'),
      files.join(', '),
    );
  });

  it(`keeps README.md within ${README_MAX_LINES} lines`, () => {
    const lines = doc('README.md').replace(/\n$/, '').split('\n').length;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines: move the detail into docs/`);
  });

  it('makes anchors as GitHub does', () => {
    assert.equal(slug('Docker Engine for tests (opt-in)'), 'docker-engine-for-tests-opt-in');
    assert.equal(
      slug('Where things are: at most two imports from a function'),
      'where-things-are-at-most-two-imports-from-a-function',
    );
    assert.equal(slug('`kubectl logs` and the kubelet API'), 'kubectl-logs-and-the-kubelet-api');
    assert.deepEqual(
      [...anchors('# A\n## Configuration\n```\n# not a heading\n```\n## Configuration\n')],
      ['a', 'configuration', 'configuration-1'],
    );
  });

  it('links only to files that exist and to headings they have', () => {
    const broken = files.flatMap((from) =>
      linkTargets(doc(from)).flatMap((target) => {
        const problem = brokenLink(from, target);
        return problem ? [`${from}: ${problem}`] : [];
      }),
    );
    assert.deepEqual(broken, []);
  });

  it('finds the links it checks', () => {
    const count = files.reduce((n, f) => n + linkTargets(doc(f)).length, 0);
    assert.ok(count > files.length, `${count} links in ${files.length} documents`);
  });
});
