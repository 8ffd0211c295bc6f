/**
 * What a mock container "prints": a tiny reading of its command and args, so
 * that `kubectl logs` on a mock pod shows lines a user can predict. Nothing
 * runs; the output is a pure function of the command, the args and the time
 * the container started.
 *
 * Understood: `echo WORDS...` as the command itself, and `sh -c SCRIPT` (or
 * bash, ash, dash) whose script is made of `echo`, `sleep N`, `exit N`,
 * `while ...; do ...; done` (always loops: the condition is not evaluated) and
 * `for VAR in WORDS; do ...; done` (with `$VAR` and `${VAR}` replaced in the
 * echoed words), separated by `;`, `&&`, `||` or newlines. Quotes group words;
 * nothing else is expanded. Any other statement prints nothing and takes no
 * time.
 */

/** One step of a mock program. */
export type MockStep =
  | { kind: 'echo'; text: string }
  | { kind: 'sleep'; ms: number }
  | { kind: 'exit' }
  | { kind: 'loop'; body: MockStep[] };

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash']);

/** The steps the command and args of a container amount to. */
export function mockProgram(command: readonly string[] = [], args: readonly string[] = []): MockStep[] {
  const argv = [...command, ...args];
  const name = basename(argv[0] ?? '');
  if (name === 'echo') return [echo(argv.slice(1))];
  if (SHELLS.has(name) && argv[1] === '-c' && argv[2] !== undefined) return parseScript(argv[2]);
  return [];
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function echo(words: readonly string[]): MockStep {
  const rest = words[0] === '-n' || words[0] === '-e' ? words.slice(1) : words;
  return { kind: 'echo', text: rest.join(' ') };
}

type Token = { word: string } | { op: string };

/** Words (quotes removed) and the separators `;`, `&&`, `||`, `|`, newline. */
export function tokenize(script: string): Token[] {
  const tokens: Token[] = [];
  let word: string | undefined;
  const flush = () => {
    if (word !== undefined) tokens.push({ word });
    word = undefined;
  };
  for (let i = 0; i < script.length; i++) {
    const c = script.charAt(i);
    if (c === "'" || c === '"') {
      const end = script.indexOf(c, i + 1);
      const stop = end < 0 ? script.length : end;
      word = (word ?? '') + script.slice(i + 1, stop);
      i = stop;
    } else if (c === '\\' && i + 1 < script.length) {
      word = (word ?? '') + script.charAt(++i);
    } else if (c === ';' || c === '\n') {
      flush();
      tokens.push({ op: ';' });
    } else if ((c === '&' || c === '|') && script.charAt(i + 1) === c) {
      flush();
      tokens.push({ op: ';' });
      i++;
    } else if (c === '|' || c === '&') {
      flush();
      tokens.push({ op: c });
    } else if (c === ' ' || c === '\t') {
      flush();
    } else {
      word = (word ?? '') + c;
    }
  }
  flush();
  return tokens;
}

/** Splits tokens into statements (lists of words), keeping `do` and `done` as their own statements. */
function statements(tokens: Token[]): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  const end = () => {
    if (current.length > 0) out.push(current);
    current = [];
  };
  for (const token of tokens) {
    if ('op' in token) {
      end();
      continue;
    }
    // `do` and `done` start a statement of their own: `do echo x` is `do` then `echo x`.
    if (current.length === 0 && (token.word === 'do' || token.word === 'done')) {
      out.push([token.word]);
      continue;
    }
    current.push(token.word);
  }
  end();
  return out;
}

function parseScript(script: string): MockStep[] {
  const list = statements(tokenize(script));
  const [steps] = parseList(list, 0, {});
  return steps;
}

/** Parses statements from `at` until a `done` (consumed) or the end; returns the steps and the next index. */
function parseList(list: string[][], at: number, vars: Record<string, string>): [MockStep[], number] {
  const steps: MockStep[] = [];
  let i = at;
  while (i < list.length) {
    const words = list[i] ?? [];
    const [head = '', ...rest] = words;
    i++;
    if (head === 'done') return [steps, i];
    if (head === 'while' || head === 'until') {
      const [body, next] = parseBody(list, i, vars);
      steps.push({ kind: 'loop', body });
      i = next;
    } else if (head === 'for' && rest[1] === 'in') {
      const [variable = '', , ...items] = rest;
      const start = i;
      let next = i;
      for (const item of items) {
        let body: MockStep[];
        [body, next] = parseBody(list, start, { ...vars, [variable]: item });
        steps.push(...body);
      }
      if (items.length === 0) next = parseBody(list, start, vars)[1];
      i = next;
    } else if (head === 'echo') {
      steps.push(echo(rest.map((w) => substitute(w, vars))));
    } else if (head === 'sleep') {
      const seconds = Number(rest[0]);
      if (Number.isFinite(seconds) && seconds > 0) steps.push({ kind: 'sleep', ms: seconds * 1000 });
    } else if (head === 'exit') {
      steps.push({ kind: 'exit' });
    }
  }
  return [steps, i];
}

/** The body after a loop header: skips to `do`, parses to the matching `done`. */
function parseBody(list: string[][], at: number, vars: Record<string, string>): [MockStep[], number] {
  let i = at;
  while (i < list.length && list[i]?.[0] !== 'do') i++;
  return parseList(list, i + 1, vars);
}

function substitute(word: string, vars: Record<string, string>): string {
  return word.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced?: string, bare?: string) => {
    const name = braced ?? bare ?? '';
    return vars[name] ?? whole;
  });
}

/** A line the program prints, at epoch milliseconds `at`. */
export interface MockLine {
  at: number;
  text: string;
}

/** A loop with no sleep would print without end at one instant: it prints its body once and the program stops. */
export const BUSY_LOOP_NOTE = 'mock: a loop without sleep would print forever at one instant; stopped here';

/**
 * The lines of `program` in time order, the first step at `startedAt`. Lines
 * before `from` are skipped cheaply (a sleeping loop jumps over whole
 * iterations), so a container that has been printing for days costs only
 * the lines asked for. Infinite for a sleeping loop: the caller stops.
 */
export function* mockLines(
  program: readonly MockStep[],
  startedAt: number,
  from = startedAt,
): Generator<MockLine> {
  const state = { at: startedAt, exited: false };
  yield* run(program, state, from);
}

function* run(
  steps: readonly MockStep[],
  state: { at: number; exited: boolean },
  from: number,
): Generator<MockLine> {
  for (const step of steps) {
    if (state.exited) return;
    if (step.kind === 'echo') {
      if (state.at >= from) yield { at: state.at, text: step.text };
    } else if (step.kind === 'sleep') {
      state.at += step.ms;
    } else if (step.kind === 'exit') {
      state.exited = true;
    } else {
      yield* loop(step.body, state, from);
      return;
    }
  }
}

function* loop(
  body: readonly MockStep[],
  state: { at: number; exited: boolean },
  from: number,
): Generator<MockLine> {
  // A body that prints nothing prints nothing on any pass: it would be iterated without end for a line.
  if (!printsAnything(body)) return;
  const period = fixedDuration(body);
  if (period === 0) {
    yield* run(body, state, from);
    yield { at: state.at, text: BUSY_LOOP_NOTE };
    state.exited = true;
    return;
  }
  if (period !== undefined && from > state.at) {
    state.at += Math.floor((from - state.at) / period) * period;
  }
  for (;;) {
    const before = state.at;
    yield* run(body, state, from);
    if (state.exited) return;
    // A body whose duration depends on a nested loop never comes back here; one that takes no time is handled above.
    if (state.at === before) return;
  }
}

/** Whether `steps` hold an echo, in a nested loop too. */
function printsAnything(steps: readonly MockStep[]): boolean {
  return steps.some((s) => s.kind === 'echo' || (s.kind === 'loop' && printsAnything(s.body)));
}

/** The time one pass of `steps` takes, or undefined when it exits or holds a loop (no fixed length). */
function fixedDuration(steps: readonly MockStep[]): number | undefined {
  let total = 0;
  for (const step of steps) {
    if (step.kind === 'sleep') total += step.ms;
    else if (step.kind === 'exit' || step.kind === 'loop') return undefined;
  }
  return total;
}
