import type { ContainerRun } from './sim-types.ts';

/**
 * A container's process read from a `sh -c` script, just enough for the
 * provider's own tests: `sleep N` adds run time (`sleep infinity` never
 * ends), `exit N` ends with that code, `echo WORDS` prints a line, `trap ''
 * TERM` ignores SIGTERM; `test "$VAR" = value || exit N` checks the
 * environment; `touch FILE` and `rm FILE` are remembered with their time, for
 * a health check's `test -e FILE`. Anything else (a server, no command) runs
 * until stopped.
 */
export function scriptBehaviour(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
): ContainerRun {
  const script = (argv[0] === 'sh' || argv[0] === '/bin/sh') && argv[1] === '-c' ? argv[2] : undefined;
  if (script === undefined) return { exitCode: 0, ignoresTerm: false, lines: [] };
  let seconds = 0;
  const lines: string[] = [];
  let ignoresTerm = false;
  const files: NonNullable<ContainerRun['files']> = [];
  for (const part of script.split(/;|&&|\n/).map((p) => p.trim())) {
    const touch = /^touch (\S+)$/.exec(part);
    if (touch?.[1]) files.push({ path: touch[1], at: seconds, exists: true });
    const rm = /^rm(?: -f| -rf)? (\S+)$/.exec(part);
    if (rm?.[1]) files.push({ path: rm[1], at: seconds, exists: false });
    const check = /^test "\$(\w+)" = (\S+) \|\| exit (\d+)$/.exec(part);
    if (check) {
      if (env[check[1] ?? ''] !== check[2])
        return { seconds, exitCode: Number(check[3]), ignoresTerm, lines, files };
      continue;
    }
    const sleep = /^sleep (\S+)$/.exec(part);
    if (sleep?.[1] === 'infinity') return { exitCode: 0, ignoresTerm, lines, files };
    if (sleep) seconds += Number(sleep[1]);
    const exit = /^exit (\d+)$/.exec(part);
    if (exit) return { seconds, exitCode: Number(exit[1]), ignoresTerm, lines, files };
    const echo = /^echo (.*)$/.exec(part);
    if (echo) lines.push((echo[1] ?? '').replace(/^['"]|['"]$/g, ''));
    if (part === "trap '' TERM") ignoresTerm = true;
  }
  return { seconds, exitCode: 0, ignoresTerm, lines, files };
}
