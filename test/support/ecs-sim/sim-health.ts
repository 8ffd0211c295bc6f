import type { SimContainer } from './sim-types.ts';

/**
 * A container's health status as ECS reports it in DescribeTasks (ECS
 * Developer Guide, "Determine Amazon ECS task health using container health
 * checks"): UNKNOWN until the first check, HEALTHY once a check passes,
 * UNHEALTHY after `retries` failures in a row; a failure within the start
 * period does not count. Checks run every `interval` seconds from the
 * container's start. The simulation runs no command: a check passes or
 * fails by what the container's script did by then (`test -e FILE` sees the
 * files it touched and removed, `true` passes, `false` fails; any other
 * command passes).
 */
export function healthStatus(c: SimContainer, now: number): 'HEALTHY' | 'UNHEALTHY' | 'UNKNOWN' | undefined {
  const check = c.healthCheck;
  if (!check) return undefined;
  if (c.lastStatus !== 'RUNNING' || c.startedAt === undefined) return 'UNKNOWN';
  let status: 'HEALTHY' | 'UNHEALTHY' | 'UNKNOWN' = 'UNKNOWN';
  let failures = 0;
  const interval = Math.max(1, check.interval) * 1000;
  for (let t = c.startedAt + interval; t <= now; t += interval) {
    if (passes(c, check.command, (t - c.startedAt) / 1000)) {
      status = 'HEALTHY';
      failures = 0;
      continue;
    }
    if (t - c.startedAt < check.startPeriod * 1000) continue;
    failures++;
    if (failures >= check.retries) status = 'UNHEALTHY';
  }
  return status;
}

function passes(c: SimContainer, command: readonly string[], seconds: number): boolean {
  const [form, ...rest] = command;
  const words = form === 'CMD-SHELL' ? (rest[0] ?? '').split(/\s+/) : rest;
  if (words[0] === 'false') return false;
  if (words[0] === 'test' && words[1] === '-e' && words[2]) {
    const path = words[2];
    let exists = false;
    for (const f of c.run.files ?? []) if (f.path === path && f.at <= seconds) exists = f.exists;
    return exists;
  }
  return true;
}
