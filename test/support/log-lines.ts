/** Reading `kubectl logs` output in tests: lines, stamped lines, numbered lines. */

/** The lines of a log (each ended by a newline), without those equal to one of `without`. */
export function logLines(text: string, ...without: string[]): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.filter((l) => !without.includes(l));
}

export interface StampedLine {
  /** The timestamp as printed. */
  stamp: string;
  /** It, parsed (NaN when it is not a time). */
  at: number;
  text: string;
}

/** The lines of a `--timestamps` log: each is its timestamp, a space, and the text. */
export function stampedLines(text: string): StampedLine[] {
  return logLines(text).map((line) => {
    const space = line.indexOf(' ');
    const stamp = space < 0 ? line : line.slice(0, space);
    return { stamp, at: Date.parse(stamp), text: space < 0 ? '' : line.slice(space + 1) };
  });
}

/** `<prefix> <from>`, `<prefix> <from + 1>`, ...: `count` lines. */
export function numbered(prefix: string, from: number, count: number): string[] {
  return Array.from({ length: Math.max(0, count) }, (_, i) => `${prefix} ${from + i}`);
}

/** The number at the end of a numbered line (NaN for another line). */
export function numberOf(line: string | undefined): number {
  const m = /^(.*) (\d+)$/.exec(line ?? '');
  return m ? Number(m[2]) : Number.NaN;
}

/** What `lines` would be if they were consecutive numbered lines from their first one on. */
export function consecutiveFrom(lines: readonly string[]): string[] {
  const first = lines[0] ?? '';
  return numbered(first.slice(0, first.lastIndexOf(' ')), numberOf(first), lines.length);
}
