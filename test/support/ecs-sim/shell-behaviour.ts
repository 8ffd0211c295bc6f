import { MockCommandError, mockRun } from '../../../lib/provider/mock/mock-command.ts';
import { scriptBehaviour } from './script-behaviour.ts';
import type { ContainerRun } from './sim-types.ts';

/**
 * A simulated container's process, read from its command with the mock
 * provider's small shell (lib/provider/mock/mock-command.ts: run time, exit
 * code, a SIGTERM trap, `test` against the environment) and the lines its
 * `echo`s print, and the files its `touch` and `rm` make and remove (for a
 * health check's `test -e FILE`). A script the shell cannot read fails as
 * `sh` does on a syntax error (exit 2, at once).
 */
export function shellBehaviour(argv: readonly string[], env: Readonly<Record<string, string>>): ContainerRun {
  const { lines, files } = scriptBehaviour(argv, env);
  try {
    const run = mockRun(argv, [], env);
    if (!run) return { exitCode: 0, ignoresTerm: false, lines, ...(files ? { files } : {}) };
    return {
      ...(run.seconds !== undefined ? { seconds: run.seconds } : {}),
      exitCode: run.exitCode,
      ignoresTerm: run.ignoresTerm,
      lines,
      ...(files ? { files } : {}),
    };
  } catch (err) {
    if (!(err instanceof MockCommandError)) throw err;
    return { seconds: 0, exitCode: 2, ignoresTerm: false, lines: [err.message] };
  }
}
