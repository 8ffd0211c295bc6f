import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/**
 * What several local engine instances on one machine share (Podman services,
 * and the Docker Engines of lib/local/dockerd.ts), and how each leaves it
 * clean: the bridge network's subnet and interface name (each instance has
 * its own network config and IP allocation, so two instances on one subnet
 * would hand out the same addresses), and what netavark creates outside any
 * instance directory (iptables chains, the /run/netns mount).
 */

/** Registry of the slots in use: one file per slot naming its owner's pid and directory. */
const SLOT_DIR = '/run/serverless-virtual-kubelet/podman-slots';
const SLOTS = 4096;

/** One instance's share of the host: its bridge network. */
export interface PodmanSlot {
  index: number;
  /** A /24 in 10.192.0.0/12, free on the host when claimed. */
  subnet: string;
  /** The bridge interface (at most 15 characters). */
  bridge: string;
  /** The Podman network name. */
  network: string;
}

/** Which engine holds a slot: a dead owner's instance is cleaned up by an instance of the same kind. */
export type EngineKind = 'podman' | 'dockerd';

interface SlotOwner {
  pid: number;
  dir: string;
  /** Absent in the files of instances that predate Docker Engine instances: Podman. */
  kind?: EngineKind;
}

export function slotFor(index: number): PodmanSlot {
  return {
    index,
    subnet: `10.${192 + (index >> 8)}.${index & 255}.0/24`,
    bridge: `svk${index}`,
    network: `svk${index}`,
  };
}

/** Instances of `kind` whose owner died without cleaning up (their directory, to reap). */
export function staleSlots(kind: EngineKind): Array<{ slot: PodmanSlot; dir: string }> {
  if (!existsSync(SLOT_DIR)) return [];
  return readdirSync(SLOT_DIR).flatMap((name) => {
    const owner = readOwner(join(SLOT_DIR, name));
    const index = Number(name);
    if (!Number.isInteger(index) || !owner || alive(owner.pid) || (owner.kind ?? 'podman') !== kind)
      return [];
    return [{ slot: slotFor(index), dir: owner.dir }];
  });
}

/**
 * Claims a free slot for `dir`, owned by this process: the claim is a file
 * created exclusively, so two instances starting at once never share one.
 * Slots whose subnet some host interface already uses are skipped.
 */
export async function claimSlot(
  dir: string,
  kind: EngineKind = 'podman',
  pid: number = process.pid,
): Promise<PodmanSlot> {
  mkdirSync(SLOT_DIR, { recursive: true });
  const routes = await hostRoutes();
  const start = pid % SLOTS;
  for (let i = 0; i < SLOTS; i++) {
    const slot = slotFor((start + i) % SLOTS);
    if (routes.some((r) => r.startsWith(slot.subnet.replace(/0\/24$/, '')))) continue;
    try {
      writeFileSync(
        join(SLOT_DIR, String(slot.index)),
        JSON.stringify({ pid, dir, kind } satisfies SlotOwner),
        {
          flag: 'wx',
        },
      );
      return slot;
    } catch (err) {
      if (!isExists(err)) throw err;
    }
  }
  throw new Error(`no free podman network slot in ${SLOT_DIR}`);
}

/** How many slots instances of `kind` hold, live or dead. */
export function heldSlots(kind: EngineKind): number {
  if (!existsSync(SLOT_DIR)) return 0;
  return readdirSync(SLOT_DIR).filter((name) => (readOwner(join(SLOT_DIR, name))?.kind ?? 'podman') === kind)
    .length;
}

export function releaseSlot(slot: PodmanSlot): void {
  rmSync(join(SLOT_DIR, String(slot.index)), { force: true });
  removeEmptyDirs([SLOT_DIR, '/run/serverless-virtual-kubelet']);
}

/** What existed on the host before an instance started, so that its cleanup removes only what Podman added. */
export interface HostSnapshot {
  /** Paths under /run that existed. */
  existing: string[];
}

/** Where podman, netavark and runc keep host-wide state (netavark's IP allocations are in /run/containers/networks). */
const HOST_PATHS = ['/run/netns', '/run/containers', '/run/libpod', '/run/runc'];

export function snapshotHost(): HostSnapshot {
  return { existing: HOST_PATHS.filter((p) => existsSync(p)) };
}

/**
 * Removes what netavark, podman and runc left on the host, by the last
 * instance out: only when no other instance holds a slot and no network
 * namespace is left, and only what did not exist before `before` was taken.
 */
export async function cleanHost(before: HostSnapshot, log: (line: string) => void): Promise<void> {
  const others = existsSync(SLOT_DIR) ? readdirSync(SLOT_DIR) : [];
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  if (others.length > 0 || netns.length > 0) {
    log(
      `podman: leaving shared host state to the last instance (${others.length} other instances, ${netns.length} network namespaces)`,
    );
    return;
  }
  await removeNetavarkChains(log);
  const added = (path: string) => !before.existing.includes(path) && existsSync(path);
  if (added('/run/netns')) {
    await execFileAsync('umount', ['/run/netns']).catch(() => undefined);
    removeEmptyDirs(['/run/netns']);
  }
  if (added('/run/containers')) {
    rmSync('/run/containers/networks/ipam.db', { force: true });
    removeEmptyDirs(['/run/containers/networks', '/run/containers']);
  }
  if (added('/run/libpod')) removeEmptyDirs(['/run/libpod']);
  if (added('/run/runc')) removeEmptyDirs(['/run/runc']);
}

/**
 * netavark's iptables state shared by all its networks: chains named
 * NETAVARK* and the rules of the built-in chains that jump to them. A network
 * with containers adds rules to NETAVARK_FORWARD and the isolation chains
 * (filter) and a chain of its own (nat, `NETAVARK-<id>`): then it is in use.
 */
export function netavarkInUse(table: string, rules: readonly string[]): boolean {
  if (table === 'nat') return rules.some((l) => /^-N NETAVARK-(DN-)?[0-9A-F]{6,}$/.test(l));
  return rules.some((l) => /^-A NETAVARK_(FORWARD|ISOLATION_\d+) /.test(l));
}

async function removeNetavarkChains(log: (line: string) => void): Promise<void> {
  for (const table of ['filter', 'nat']) {
    const listed = await iptables(['-t', table, '-S']).catch(() => undefined);
    if (listed === undefined) continue;
    const rules = listed.split('\n').filter(Boolean);
    if (netavarkInUse(table, rules)) {
      log(`podman: leaving netavark's iptables chains in table ${table}: a network still uses them`);
      continue;
    }
    const chains = rules.flatMap((l) => (/^-N NETAVARK/.test(l) ? [l.slice(3)] : []));
    for (const rule of rules) {
      const jump = / -j (NETAVARK\S*)$/.exec(rule)?.[1];
      const from = /^-A (\S+) /.exec(rule)?.[1];
      if (!jump || !from || from.startsWith('NETAVARK')) continue;
      await iptables(['-t', table, '-D', ...splitRule(rule.slice(3))]).catch(() => undefined);
    }
    for (const chain of chains) await iptables(['-t', table, '-F', chain]).catch(() => undefined);
    for (const chain of chains) await iptables(['-t', table, '-X', chain]).catch(() => undefined);
  }
}

async function iptables(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('iptables', ['-w', '5', ...args]);
  return stdout;
}

/** Splits an `iptables -S` rule into arguments, honouring double-quoted comments. */
export function splitRule(rule: string): string[] {
  const args: string[] = [];
  for (const match of rule.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) args.push(match[1] ?? match[2] ?? '');
  return args;
}

async function hostRoutes(): Promise<string[]> {
  try {
    const { stdout } = await execFileAsync('ip', ['-4', 'route', 'show']);
    return stdout
      .split('\n')
      .map((l) => l.split(' ')[0] ?? '')
      .filter(Boolean);
  } catch {
    return [];
  }
}

function readOwner(path: string): SlotOwner | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, dir, kind } = value as Record<string, unknown>;
    if (typeof pid !== 'number' || typeof dir !== 'string') return undefined;
    return kind === 'dockerd' || kind === 'podman' ? { pid, dir, kind } : { pid, dir };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isExists(err: unknown): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === 'EEXIST';
}

export function removeEmptyDirs(dirs: string[]): void {
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {
      // Not empty, absent or still a mount point: someone else's.
    }
  }
}
