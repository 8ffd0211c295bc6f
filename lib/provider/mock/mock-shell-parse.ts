/**
 * The parser of the mock's tiny shell (see mock-command.ts): POSIX sh's
 * grammar for lists, and-or lists, pipelines, `if`, `while`/`until`, `for`,
 * `{ }` and `( )` groups and simple commands. Words keep their quoting, so
 * that only unquoted and double-quoted text is expanded.
 */

/** A piece of a word: `expand` pieces have `$VAR`, `${VAR}` and `$?` replaced when evaluated. */
export interface WordPart {
  text: string;
  expand: boolean;
}

export type Word = WordPart[];

export type Node =
  | { kind: 'simple'; words: Word[] }
  | { kind: 'list'; items: { node: Node; background: boolean }[] }
  | { kind: 'and-or'; first: Node; rest: { op: '&&' | '||'; node: Node }[] }
  | { kind: 'pipeline'; negate: boolean; commands: Node[] }
  | { kind: 'if'; branches: { condition: Node; body: Node }[]; otherwise?: Node }
  | { kind: 'loop'; until: boolean; condition: Node; body: Node }
  | { kind: 'for'; variable: string; items: Word[]; body: Node }
  | { kind: 'group'; body: Node; subshell: boolean };

/** The script is not shell the mock can read (unbalanced quotes, a missing `done`...). */
export class MockShellSyntaxError extends Error {
  override readonly name = 'MockShellSyntaxError';
}

type Token = { word: Word } | { op: string };

const OPERATORS = ['&&', '||', ';', '\n', '&', '|', '(', ')'];

/** Splits a script into words (with their quoting) and operators. */
export function tokenize(script: string): Token[] {
  const tokens: Token[] = [];
  let word: Word | undefined;
  const add = (text: string, expand: boolean) => {
    word ??= [];
    word.push({ text, expand });
  };
  const flush = () => {
    if (word) tokens.push({ word });
    word = undefined;
  };
  for (let i = 0; i < script.length; i++) {
    const c = script.charAt(i);
    if (c === "'" || c === '"') {
      const end = script.indexOf(c, i + 1);
      if (end < 0) throw new MockShellSyntaxError(`unterminated ${c} quote`);
      add(script.slice(i + 1, end), c === '"');
      i = end;
    } else if (c === '\\' && i + 1 < script.length) {
      add(script.charAt(++i), false);
    } else if (c === '#' && word === undefined) {
      while (i + 1 < script.length && script.charAt(i + 1) !== '\n') i++;
    } else if (c === ' ' || c === '\t') {
      flush();
    } else {
      const op = OPERATORS.find((o) => script.startsWith(o, i));
      if (op) {
        flush();
        tokens.push({ op });
        i += op.length - 1;
      } else {
        add(c, true);
      }
    }
  }
  flush();
  return tokens;
}

/** The literal text of a word when none of it is quoted: how reserved words are recognised. */
function bare(token: Token | undefined): string | undefined {
  if (!token || !('word' in token)) return undefined;
  return token.word.every((p) => p.expand) ? token.word.map((p) => p.text).join('') : undefined;
}

const LIST_ENDS = new Set(['do', 'done', 'then', 'elif', 'else', 'fi', '}']);

/** Parses a whole script. */
export function parseScript(script: string): Node {
  const parser = new Parser(tokenize(script));
  const node = parser.list();
  if (!parser.atEnd()) throw new MockShellSyntaxError(`unexpected ${parser.describeNext()}`);
  return node;
}

class Parser {
  #at = 0;
  constructor(private readonly tokens: Token[]) {}

  atEnd(): boolean {
    return this.#at >= this.tokens.length;
  }

  describeNext(): string {
    const t = this.tokens[this.#at];
    if (!t) return 'end of script';
    return 'op' in t ? `"${t.op === '\n' ? '\\n' : t.op}"` : `"${t.word.map((p) => p.text).join('')}"`;
  }

  list(): Node {
    const items: { node: Node; background: boolean }[] = [];
    for (;;) {
      this.#skipSeparators();
      if (this.atEnd() || this.#peekOp(')') || LIST_ENDS.has(bare(this.tokens[this.#at]) ?? '')) break;
      const node = this.#andOr();
      items.push({ node, background: this.#takeOp('&') });
    }
    return { kind: 'list', items };
  }

  #andOr(): Node {
    const first = this.#pipeline();
    const rest: { op: '&&' | '||'; node: Node }[] = [];
    for (;;) {
      const op = this.#takeOp('&&') ? '&&' : this.#takeOp('||') ? '||' : undefined;
      if (!op) break;
      while (this.#takeOp('\n'));
      rest.push({ op, node: this.#pipeline() });
    }
    return rest.length === 0 ? first : { kind: 'and-or', first, rest };
  }

  #pipeline(): Node {
    const negate = bare(this.tokens[this.#at]) === '!';
    if (negate) this.#at++;
    const commands = [this.#command()];
    while (this.#takeOp('|')) commands.push(this.#command());
    return commands.length === 1 && !negate ? (commands[0] as Node) : { kind: 'pipeline', negate, commands };
  }

  #command(): Node {
    const head = bare(this.tokens[this.#at]);
    if (head === 'if') return this.#if();
    if (head === 'while' || head === 'until') {
      this.#at++;
      const condition = this.list();
      this.#expect('do');
      const body = this.list();
      this.#expect('done');
      return { kind: 'loop', until: head === 'until', condition, body };
    }
    if (head === 'for') return this.#for();
    if (head === '{') {
      this.#at++;
      const body = this.list();
      this.#expect('}');
      return { kind: 'group', body, subshell: false };
    }
    if (this.#takeOp('(')) {
      const body = this.list();
      if (!this.#takeOp(')')) throw new MockShellSyntaxError(`expected ")" before ${this.describeNext()}`);
      return { kind: 'group', body, subshell: true };
    }
    const words: Word[] = [];
    for (let t = this.tokens[this.#at]; t && 'word' in t; t = this.tokens[this.#at]) {
      words.push(t.word);
      this.#at++;
    }
    if (words.length === 0)
      throw new MockShellSyntaxError(`expected a command before ${this.describeNext()}`);
    return { kind: 'simple', words };
  }

  #if(): Node {
    this.#at++;
    const branches: { condition: Node; body: Node }[] = [];
    let otherwise: Node | undefined;
    for (;;) {
      const condition = this.list();
      this.#expect('then');
      branches.push({ condition, body: this.list() });
      const next = bare(this.tokens[this.#at]);
      this.#at++;
      if (next === 'elif') continue;
      if (next === 'else') {
        otherwise = this.list();
        this.#expect('fi');
      } else if (next !== 'fi') {
        throw new MockShellSyntaxError('expected "fi"');
      }
      return { kind: 'if', branches, ...(otherwise ? { otherwise } : {}) };
    }
  }

  #for(): Node {
    this.#at++;
    const variable = bare(this.tokens[this.#at]);
    if (!variable) throw new MockShellSyntaxError('expected a variable name after "for"');
    this.#at++;
    const items: Word[] = [];
    if (bare(this.tokens[this.#at]) === 'in') {
      this.#at++;
      for (let t = this.tokens[this.#at]; t && 'word' in t; t = this.tokens[this.#at]) {
        items.push(t.word);
        this.#at++;
      }
    }
    this.#skipSeparators();
    this.#expect('do');
    const body = this.list();
    this.#expect('done');
    return { kind: 'for', variable, items, body };
  }

  #expect(word: string): void {
    this.#skipSeparators();
    if (bare(this.tokens[this.#at]) !== word) {
      throw new MockShellSyntaxError(`expected "${word}" before ${this.describeNext()}`);
    }
    this.#at++;
  }

  #skipSeparators(): void {
    while (this.#takeOp(';') || this.#takeOp('\n'));
  }

  #peekOp(op: string): boolean {
    const t = this.tokens[this.#at];
    return t !== undefined && 'op' in t && t.op === op;
  }

  #takeOp(op: string): boolean {
    if (!this.#peekOp(op)) return false;
    this.#at++;
    return true;
  }
}
