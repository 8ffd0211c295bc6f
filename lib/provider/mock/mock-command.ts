import { type Node, parseScript, type Word } from './mock-shell-parse.ts';

/**
 * What a mock container's process does, read from its command and args: how
 * long it runs, its exit code, and whether it ignores SIGTERM. Nothing runs;
 * the script is evaluated once, when the provider creates the pod, against
 * the container's resolved environment, so a pod such as
 * `sh -c 'test "$COLOR" = blue || exit 3'` ends as a real one would, and no
 * value of the environment is stored.
 *
 * Understood, in `sh -c SCRIPT` (also bash, ash, dash): lists (`;`, newline,
 * `&` in the background, `wait`), `&&`, `||`, pipes (run one after another,
 * the last status counts), `!`, `if`/`elif`/`else`, `while`/`until`
 * (a loop that goes round once without exiting goes round forever), `for`,
 * `{ }` and `( )`, `$VAR`, `${VAR}` and `$?` outside single quotes; the
 * commands `sleep N` (also `infinity`), `exit [N]`, `true`, `false`, `:`,
 * `test`/`[` (`=`, `==`, `!=`, `-n`, `-z`, `-eq`, `-ne`, `-lt`, `-le`,
 * `-gt`, `-ge`, `!`), `trap ACTION TERM` (an empty action ignores SIGTERM),
 * `exec CMD`, `sh -c SCRIPT` and `echo`/`printf` (which print nothing here).
 * Any other command in a script succeeds at once. A container whose command
 * is neither a script nor one of these commands (a server such as `nginx`)
 * runs until it is stopped, as does a container with no command.
 */
export interface MockRun {
  /** Seconds from start to exit; absent when the process never exits by itself. */
  seconds?: number;
  exitCode: number;
  /** The process ignores SIGTERM (`trap '' TERM`): a graceful delete stops it only when the grace period ends. */
  ignoresTerm: boolean;
  /** What `echo` wrote to the container's terminationMessagePath, at most its last 4 KiB. */
  message?: string;
  /** The last 80 lines `echo` printed, at most their last 2 KiB: the message under FallbackToLogsOnError. */
  logTail?: string;
}

/** Where a container's termination message goes, for {@link mockRun}. */
export interface MockTermination {
  path: string;
  fallbackToLogs: boolean;
}

/** What the echoes of a script wrote, shared by its subshells and background jobs. */
interface ShellOutput {
  path?: string;
  file: string;
  printed: string;
}

/** The kubelet's limits on a termination message: 4 KiB of the file, the last 80 lines and 2 KiB of the log. */
const MESSAGE_BYTES = 4096;
const LOG_LINES = 80;
const LOG_BYTES = 2048;

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash']);
const BUILTINS = new Set([
  'sleep',
  'exit',
  'true',
  'false',
  ':',
  'test',
  '[',
  'trap',
  'echo',
  'printf',
  'exec',
]);

/** A command or script the mock cannot read; createPod refuses the pod with this message. */
export class MockCommandError extends Error {
  override readonly name = 'MockCommandError';
}

/**
 * The run of a container with this command, args and environment, or
 * undefined when it has no command the mock models (it then runs until
 * stopped, or as the pod's mock annotations say).
 * @throws MockCommandError when a script cannot be parsed.
 */
export function mockRun(
  command: readonly string[] = [],
  args: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
  termination?: MockTermination,
): MockRun | undefined {
  const argv = [...command, ...args];
  const program = basename(argv[0] ?? '');
  if (!SHELLS.has(program) && !BUILTINS.has(program)) return undefined;
  const out: ShellOutput = { file: '', printed: '', ...(termination ? { path: termination.path } : {}) };
  const shell = new Shell(env, out);
  try {
    if (SHELLS.has(program)) {
      if (argv[1] !== '-c' || argv[2] === undefined) return undefined;
      shell.run(parse(argv[2]));
    } else {
      shell.simple(argv);
    }
  } catch (err) {
    if (!(err instanceof ExitSignal)) throw err;
  }
  const run = shell.result();
  if (!termination) return run;
  const message = lastBytes(out.file, MESSAGE_BYTES);
  const lines = out.printed
    .split(/(?<=\n)/)
    .slice(-LOG_LINES)
    .join('');
  return {
    ...run,
    ...(message ? { message } : {}),
    ...(termination.fallbackToLogs && lines ? { logTail: lastBytes(lines, LOG_BYTES) } : {}),
  };
}

function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text);
  return bytes.length > max ? bytes.subarray(bytes.length - max).toString('utf8') : text;
}

function parse(script: string): Node {
  try {
    return parseScript(script);
  } catch (err) {
    throw new MockCommandError(
      `mock provider cannot read the script ${JSON.stringify(script)}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Thrown by `exit` (and by a loop found to run forever) to end the script. */
class ExitSignal {}

class Shell {
  /** Seconds since start; Infinity once something never returns. */
  time = 0;
  status = 0;
  ignoresTerm = false;
  #exitCode: number | undefined;
  #background = 0;

  constructor(
    private readonly env: Readonly<Record<string, string>>,
    private readonly out: ShellOutput,
  ) {}

  result(): MockRun {
    const exitCode = this.#exitCode ?? this.status;
    return Number.isFinite(this.time)
      ? { seconds: this.time, exitCode, ignoresTerm: this.ignoresTerm }
      : { exitCode, ignoresTerm: this.ignoresTerm };
  }

  run(node: Node): void {
    switch (node.kind) {
      case 'simple':
        this.simple(node.words.map((w) => this.#expand(w)));
        return;
      case 'list':
        for (const item of node.items) {
          if (item.background) this.#inBackground(item.node);
          else this.run(item.node);
        }
        return;
      case 'and-or':
        this.run(node.first);
        for (const { op, node: next } of node.rest) {
          if ((op === '&&') === (this.status === 0)) this.run(next);
        }
        return;
      case 'pipeline':
        for (const command of node.commands) this.run(command);
        if (node.negate) this.status = this.status === 0 ? 1 : 0;
        return;
      case 'if':
        this.#if(node);
        return;
      case 'loop':
        this.#loop(node);
        return;
      case 'for':
        for (const item of node.items) {
          new Shell({ ...this.env, [node.variable]: this.#expand(item) }, this.out).#adopt(this, node.body);
        }
        return;
      case 'group':
        if (node.subshell) this.#subshell(node.body);
        else this.run(node.body);
        return;
    }
  }

  simple(argv: readonly string[]): void {
    const [name = '', ...rest] = argv;
    switch (basename(name)) {
      case 'sleep':
        this.#sleep(rest);
        return;
      case 'exit':
        this.#exitCode = rest[0] !== undefined && /^\d+$/.test(rest[0]) ? Number(rest[0]) % 256 : this.status;
        this.status = this.#exitCode;
        throw new ExitSignal();
      case 'false':
        this.status = 1;
        return;
      case 'echo':
        this.#echo(rest);
        this.status = 0;
        return;
      case 'test':
        this.status = evaluateTest(rest);
        return;
      case '[':
        this.status = rest.at(-1) === ']' ? evaluateTest(rest.slice(0, -1)) : 2;
        return;
      case 'trap':
        if (rest.slice(1).some((s) => /^(SIG)?TERM$|^15$/.test(s))) this.ignoresTerm = rest[0] === '';
        this.status = 0;
        return;
      case 'exec':
        if (rest.length > 0) this.simple(rest);
        this.#exitCode = this.status;
        throw new ExitSignal();
      case 'wait':
        this.time = Math.max(this.time, this.#background);
        this.status = 0;
        if (!Number.isFinite(this.time)) throw new ExitSignal();
        return;
      default:
        if (SHELLS.has(basename(name)) && rest[0] === '-c' && rest[1] !== undefined) {
          this.#subshell(parse(rest[1]));
          return;
        }
        // true, :, echo, printf, and every command the mock does not model.
        this.status = 0;
    }
  }

  /** `echo [-n] WORDS [> FILE | >> FILE]`: printed, or written to the termination message file. */
  #echo(args: readonly string[]): void {
    let i = 0;
    let newline = true;
    for (; /^-[neE]+$/.test(args[i] ?? ''); i++) if (args[i]?.includes('n')) newline = false;
    let words = args.slice(i);
    let target: { path: string; append: boolean } | undefined;
    const at = words.findIndex((w) => w.startsWith('>'));
    if (at >= 0) {
      const word = words[at] ?? '';
      const append = word.startsWith('>>');
      const inline = word.slice(append ? 2 : 1);
      target = { path: inline || (words[at + 1] ?? ''), append };
      words = words.slice(0, at);
    }
    const text = `${words.join(' ')}${newline ? '\n' : ''}`;
    if (!target) {
      this.out.printed = (this.out.printed + text).slice(-4 * LOG_BYTES);
    } else if (target.path === this.out.path) {
      this.out.file = ((target.append ? this.out.file : '') + text).slice(-2 * MESSAGE_BYTES);
    }
  }

  #sleep(args: readonly string[]): void {
    const arg = args[0] ?? '';
    const match = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(arg);
    if (/^inf(inity)?$/.test(arg)) {
      this.time = Number.POSITIVE_INFINITY;
      throw new ExitSignal();
    }
    if (!match) {
      this.status = 1;
      return;
    }
    const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] ?? ''] ?? 1;
    this.time += Number(match[1]) * unit;
    this.status = 0;
    if (!Number.isFinite(this.time)) throw new ExitSignal();
  }

  #if(node: Extract<Node, { kind: 'if' }>): void {
    for (const branch of node.branches) {
      this.run(branch.condition);
      if (this.status === 0) {
        this.run(branch.body);
        return;
      }
    }
    if (node.otherwise) this.run(node.otherwise);
    else this.status = 0;
  }

  /** Without variable assignment every round of a loop is the same: one round that neither stops nor exits means forever. */
  #loop(node: Extract<Node, { kind: 'loop' }>): void {
    this.run(node.condition);
    const goesOn = (this.status === 0) !== node.until;
    if (!goesOn) {
      this.status = 0;
      return;
    }
    this.run(node.body);
    this.time = Number.POSITIVE_INFINITY;
    throw new ExitSignal();
  }

  #inBackground(node: Node): void {
    const job = new Shell(this.env, this.out);
    job.ignoresTerm = this.ignoresTerm;
    try {
      job.run(node);
    } catch (err) {
      if (!(err instanceof ExitSignal)) throw err;
    }
    this.#background = Math.max(this.#background, this.time + job.time);
    this.status = 0;
  }

  #subshell(node: Node): void {
    const sub = new Shell(this.env, this.out);
    sub.time = this.time;
    sub.ignoresTerm = this.ignoresTerm;
    try {
      sub.run(node);
    } catch (err) {
      if (!(err instanceof ExitSignal)) throw err;
    }
    this.time = sub.time;
    this.status = sub.#exitCode ?? sub.status;
    if (!Number.isFinite(this.time)) throw new ExitSignal();
  }

  /** Runs `node` with this shell's variables but `parent`'s clock, trap and outcome (a `for` round). */
  #adopt(parent: Shell, node: Node): void {
    this.time = parent.time;
    this.ignoresTerm = parent.ignoresTerm;
    try {
      this.run(node);
    } finally {
      parent.time = this.time;
      parent.status = this.status;
      parent.ignoresTerm = this.ignoresTerm;
      if (this.#exitCode !== undefined) parent.#exitCode = this.#exitCode;
    }
  }

  #expand(word: Word): string {
    return word
      .map((part) =>
        part.expand
          ? part.text.replace(/\$\{(\w+)\}|\$(\w+|\?)/g, (_whole, braced?: string, plain?: string) => {
              const name = braced ?? plain ?? '';
              return name === '?' ? String(this.status) : (this.env[name] ?? '');
            })
          : part.text,
      )
      .join('');
  }
}

/** `test`'s exit status for these operands: 0 true, 1 false, 2 an expression it does not know. */
export function evaluateTest(args: readonly string[]): number {
  if (args[0] === '!') {
    const inner = evaluateTest(args.slice(1));
    return inner === 2 ? 2 : 1 - inner;
  }
  const truth = (b: boolean) => (b ? 0 : 1);
  if (args.length === 0) return 1;
  if (args.length === 1) return truth((args[0] ?? '') !== '');
  if (args.length === 2) {
    if (args[0] === '-n') return truth((args[1] ?? '') !== '');
    if (args[0] === '-z') return truth((args[1] ?? '') === '');
    return 2;
  }
  if (args.length !== 3) return 2;
  const [left = '', op = '', right = ''] = args;
  if (op === '=' || op === '==') return truth(left === right);
  if (op === '!=') return truth(left !== right);
  const compare = { '-eq': 0, '-ne': 0, '-lt': 0, '-le': 0, '-gt': 0, '-ge': 0 };
  if (!(op in compare) || !/^-?\d+$/.test(left) || !/^-?\d+$/.test(right)) return 2;
  const a = Number(left);
  const b = Number(right);
  const results: Record<string, boolean> = {
    '-eq': a === b,
    '-ne': a !== b,
    '-lt': a < b,
    '-le': a <= b,
    '-gt': a > b,
    '-ge': a >= b,
  };
  return truth(results[op] ?? false);
}
