import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HostProcessOptions } from '../../lib/local/function-host.ts';

/**
 * Wall clocks apart between invocations, for the local runtime's host
 * process (`lib/local/function-host.ts`): {@link WallClockSkew.hostProcess}
 * forks it with `--import` of `wall-clock-skew-import.ts`, which shifts
 * `Date.now()` and argument-less `new Date()` (and `Date()`) of each
 * invocation by one of the offsets written to a control file. Invocations of
 * a function take the offsets in turn, as invocations landing on sandboxes
 * of differently wrong clocks would; the monotonic clock (`performance.now()`)
 * is left alone, as are code outside any invocation and the other processes
 * (the API server, DynamoDB Local, the test itself). The file is read again
 * when it changes, so a test turns the skew on and off without restarting
 * the sandboxes.
 */

/** The variable naming the control file in the host process's environment. */
export const WALL_CLOCK_SKEW_FILE_VARIABLE = 'SVK_TEST_WALL_CLOCK_SKEW_FILE';

/** How often the host process looks at the control file. */
export const WALL_CLOCK_SKEW_POLL_MS = 100;

/** Largest offset accepted: a day, far beyond any fault worth injecting. */
const MAX_OFFSET_MS = 86_400_000;

const IMPORT = fileURLToPath(new URL('./wall-clock-skew-import.ts', import.meta.url));

/**
 * The control file's text: a JSON array of whole milliseconds, each within a
 * day either way; empty text or `[]` means no skew.
 * @throws Error naming what is wrong with the text.
 */
export function parseSkewOffsets(text: string): number[] {
  if (text.trim() === '') return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`wall clock skew: not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(value))
    throw new Error(`wall clock skew: not an array of offsets in ms: ${text.trim()}`);
  return value.map((offset: unknown, i) => {
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || Math.abs(offset) > MAX_OFFSET_MS)
      throw new Error(
        `wall clock skew: offset ${i} must be whole milliseconds within ±${MAX_OFFSET_MS}, got ${JSON.stringify(offset)}`,
      );
    return offset;
  });
}

/** The test's side: the host process's options and the control file it writes. */
export class WallClockSkew {
  readonly file: string;

  /** Creates the control file in `dir`, with no skew. */
  constructor(dir: string) {
    this.file = join(dir, 'wall-clock-skew.json');
    this.set([]);
  }

  /** For `PipelineHarness.start({ hostProcess })` (or the local deployment's option of that name). */
  get hostProcess(): HostProcessOptions {
    return {
      execArgv: ['--import', IMPORT],
      env: { [WALL_CLOCK_SKEW_FILE_VARIABLE]: this.file },
    };
  }

  /**
   * The offsets invocations take in turn from now on (within
   * {@link WALL_CLOCK_SKEW_POLL_MS} or so); `[]` for none.
   * @throws Error naming a bad offset; the file is then left as it was.
   */
  set(offsetsMs: readonly number[]): void {
    const text = JSON.stringify(offsetsMs);
    parseSkewOffsets(text);
    writeFileSync(this.file, text);
  }
}
