/**
 * The project's documents (README.md and docs/) as tests read them: a
 * section by its heading, the first Markdown table in it, code spans and
 * fenced code blocks. The documents state facts (RBAC rules, access entries,
 * module paths, variables) that tests derive from the code and compare, so
 * that they cannot drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './source-graph.ts';

/** The Markdown of a document, by its path from the repository root (`docs/deploy.md`). */
export function doc(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/**
 * The text under the heading whose title is `title` (any level), up to the
 * next heading of the same or a higher level.
 * @throws when no heading has that title.
 */
export function section(markdown: string, title: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^#{1,6} /.test(l) && l.replace(/^#+ /, '') === title);
  if (start < 0) throw new Error(`no heading "${title}"`);
  const level = (lines[start] ?? '').indexOf(' ');
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    const line = lines[end] ?? '';
    if (line.startsWith('```')) fenced = !fenced;
    const heading = /^(#{1,6}) /.exec(line);
    if (!fenced && heading && (heading[1] ?? '').length <= level) break;
  }
  return lines.slice(start + 1, end).join('\n');
}

/** The cells of each body row of the first table in `text` (header and separator left out), trimmed. */
export function tableRows(text: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  if (start < 0) return [];
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .replace(/^\|/, '')
        .replace(/\|$/, '')
        .split('|')
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** The contents of the `code spans` of a Markdown text, in order. */
export function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
}

/** The bodies of the fenced code blocks of a Markdown text, in order. */
export function codeBlocks(text: string): string[] {
  return [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
}
