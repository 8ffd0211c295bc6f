import { spawnSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VOLUME_WRITER_SCRIPT } from '../../../lib/provider/ecs/volume-writer.ts';
import type { ContainerBehaviour } from './sim-types.ts';

/**
 * The ECS provider's volume writer container (lib/provider/ecs/volume-writer.ts)
 * in the simulation, which runs no processes: its own script is run for
 * real (the host's `sh`) on the environment ECS's agent resolved for it
 * (definition, override, SSM), into a temporary directory standing in for
 * the task volumes it mounts. What it wrote is read back from there.
 */

/** A file as written: its content and its mode (through the `..data` link). */
export interface WrittenFile {
  content: Buffer;
  mode: number;
}

/**
 * Runs the writer's argv (`sh -c <script> <name> <root>`) with `root`
 * replaced by a new temporary directory, in which the directories `mounts`
 * (its mount points under the root, which ECS makes) exist.
 */
export function runVolumeWriter(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  mounts: readonly string[] = [],
): { exitCode: number; root: string; stderr: string } {
  const root = mkdtempSync(join(tmpdir(), 'svk-sim-volumes-'));
  for (const mount of mounts) mkdirSync(join(root, mount));
  const [shell = 'sh', flag = '-c', script = '', name = ''] = argv;
  const run = spawnSync(shell, [flag, script, name, root], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { exitCode: run.status ?? 1, root, stderr: run.stderr ?? '' };
}

/** The behaviour of every container, the writer's run for real (its exit code is the script's). */
export function withVolumeWriter(behaviour: ContainerBehaviour): ContainerBehaviour {
  return (argv, env) => {
    if (argv[2] !== VOLUME_WRITER_SCRIPT) return behaviour(argv, env);
    const { exitCode, root, stderr } = runVolumeWriter(argv, env);
    rmSync(root, { recursive: true, force: true });
    // As the simulation times any script that does not sleep: it ends as it starts.
    return { seconds: 0, exitCode, ignoresTerm: false, lines: stderr ? [stderr.trim()] : [] };
  };
}

/**
 * The files of volume directory `dir` as a container mounting it sees them:
 * each visible name must be a link through `..data`, which must link to the
 * timestamped directory; by path, every file under it.
 * @throws Error when the atomic writer's layout is not there.
 */
export function writtenFiles(dir: string): Map<string, WrittenFile> {
  const data = join(dir, '..data');
  if (!lstatSync(data).isSymbolicLink()) throw new Error(`${data} is not a link`);
  const files = new Map<string, WrittenFile>();
  for (const name of readdirSync(dir)) {
    if (name.startsWith('..')) continue;
    if (readlinkSync(join(dir, name)) !== `..data/${name}`)
      throw new Error(`${name} is not a link through ..data`);
  }
  const walk = (at: string, prefix: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      if (statSync(path).isDirectory()) walk(path, rel);
      else files.set(rel, { content: readFileSync(path), mode: statSync(path).mode & 0o777 });
    }
  };
  walk(data, '');
  return files;
}
