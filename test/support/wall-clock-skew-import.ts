/**
 * Imported (`node --import`) into a function host process by
 * {@link WallClockSkew} (wall-clock-skew.ts): from then on the process's
 * wall clock, as `Date.now()`, `new Date()` without arguments and `Date()`
 * read it, is shifted for each invocation of the local runtime by one of the
 * offsets in the file that `SVK_TEST_WALL_CLOCK_SKEW_FILE` names, the
 * invocations of each function taking the offsets in turn (an invocation keeps
 * its offset until the file changes). Outside any invocation, and while the
 * file holds no offsets, the clock is true. `performance.now()` is untouched.
 */
import { readFileSync, watchFile } from 'node:fs';
import { currentInvocation, type InvocationScope } from '../../lib/local/invocation-scope.ts';
import {
  parseSkewOffsets,
  WALL_CLOCK_SKEW_FILE_VARIABLE,
  WALL_CLOCK_SKEW_POLL_MS,
} from './wall-clock-skew.ts';

const file = process.env[WALL_CLOCK_SKEW_FILE_VARIABLE];
if (!file) throw new Error(`wall-clock-skew-import: ${WALL_CLOCK_SKEW_FILE_VARIABLE} is not set`);
const controlFile: string = file;

let offsets: number[] = [];
/** Each invocation's offset, once it first read the clock; renewed when the file changes. */
let assigned = new WeakMap<InvocationScope, number>();
/** Per function, how many invocations took an offset: the next takes the next offset. */
let turns = new Map<string, number>();

function load(): void {
  offsets = parseSkewOffsets(readFileSync(controlFile, 'utf8'));
  assigned = new WeakMap();
  turns = new Map();
  process.stderr.write(`wall-clock-skew: pid ${process.pid} offsets ${JSON.stringify(offsets)} ms\n`);
}

load();
watchFile(controlFile, { interval: WALL_CLOCK_SKEW_POLL_MS, persistent: false }, () => {
  try {
    load();
  } catch (err) {
    // A half-written or bad file: keep the offsets in force, and say why.
    process.stderr.write(
      `wall-clock-skew: ${controlFile} ignored: ${err instanceof Error ? err.message : String(err)}\n`,
    );
  }
});

function offsetMs(): number {
  if (offsets.length === 0) return 0;
  const scope = currentInvocation();
  if (!scope) return 0;
  let offset = assigned.get(scope);
  if (offset === undefined) {
    const turn = turns.get(scope.functionName) ?? 0;
    turns.set(scope.functionName, turn + 1);
    offset = offsets[turn % offsets.length] ?? 0;
    assigned.set(scope, offset);
  }
  return offset;
}

const RealDate = globalThis.Date;
const realNow = RealDate.now;
const skewedNow = (): number => realNow() + offsetMs();

// On the constructor itself, so that code holding the original Date reads the same clock.
RealDate.now = skewedNow;
globalThis.Date = new Proxy(RealDate, {
  construct(target, args, newTarget) {
    return Reflect.construct(target, args.length === 0 ? [skewedNow()] : args, newTarget) as object;
  },
  apply() {
    return new RealDate(skewedNow()).toString();
  },
});
