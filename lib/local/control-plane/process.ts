/**
 * Supervision of the control plane's child processes: one {@link Component}
 * per binary (log file, pid file, dies with this process, SIGTERM then
 * SIGKILL), and the clean-up of processes a crashed run left behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ControlPlaneStartError } from './start-error.ts';

/** Makes a child die with us even when we are SIGKILLed (util-linux; skipped when absent). */
const SETPRIV = '/usr/bin/setpriv';
/** How long SIGTERM may take before SIGKILL, unless a component says otherwise. */
export const STOP_GRACE_MS = 10_000;
const LOG_TAIL_LINES = 30;

export interface ComponentOptions {
  name: string;
  binary: string;
  args: string[];
  /** The control plane's directory: the log goes to `logs/<name>.log`, the pid to `pids/<name>.pid`. */
  dir: string;
  log: (line: string) => void;
  /** How long SIGTERM may take before SIGKILL; default {@link STOP_GRACE_MS}. */
  stopGraceMs?: number;
  /** A command that runs the binary, in the same process (`ip netns exec <name>`: it execs it). */
  launcher?: readonly string[];
}

/** One child process with its log file and pid file; restartable. */
export class Component {
  readonly name: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopRequested = false;
  /** Set by a final stop: the control plane is shutting down, so nothing may start again. */
  private closed = false;
  /** Exit code or signal of the last run, once it has exited. */
  exitStatus: string | undefined;

  constructor(private readonly options: ComponentOptions) {
    this.name = options.name;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  get logPath(): string {
    return join(this.options.dir, 'logs', `${this.name}.log`);
  }

  private get pidPath(): string {
    return join(this.options.dir, 'pids', `${this.name}.pid`);
  }

  start(): void {
    if (this.closed) throw new ControlPlaneStartError(`${this.name}: the control plane was stopped`);
    if (this.child) return;
    this.stopRequested = false;
    this.exitStatus = undefined;
    const out = openSync(this.logPath, 'a');
    const line = [...(this.options.launcher ?? []), this.options.binary, ...this.options.args];
    const [command = '', ...args] = existsSync(SETPRIV)
      ? [SETPRIV, '--pdeathsig', 'SIGKILL', '--', ...line]
      : line;
    // Own process group: a terminal's Ctrl-C goes to the runner, which stops us in order.
    const child = spawn(command, args, { stdio: ['ignore', out, out], detached: true });
    closeSync(out);
    const pid = child.pid;
    this.child = child;
    // Unreferenced: a caller that forgets stop() still exits, and the exit hook kills us.
    child.unref();
    if (pid !== undefined) {
      writeFileSync(this.pidPath, `${pid}\n`);
      liveChildren.add(pid);
    }
    this.exited = new Promise<void>((resolveExit) => {
      const onGone = (status: string) => {
        if (pid !== undefined) liveChildren.delete(pid);
        this.exitStatus = status;
        this.child = undefined;
        rmSync(this.pidPath, { force: true });
        if (!this.stopRequested) {
          this.options.log(
            `${this.name} exited unexpectedly (${status}); log ${this.logPath}:\n${this.logTail()}`,
          );
        }
        resolveExit();
      };
      child.once('exit', (code, signal) => onGone(signal ? `signal ${signal}` : `code ${code}`));
      child.once('error', (err) => onGone(`spawn error: ${err.message}`));
    });
  }

  /**
   * SIGTERM, then SIGKILL after the grace period; resolves once the
   * process has exited. `final` forbids any later start.
   */
  async stop(final = false): Promise<void> {
    if (final) this.closed = true;
    const child = this.child;
    if (!child) return;
    this.stopRequested = true;
    child.ref();
    child.kill('SIGTERM');
    const graceMs = this.options.stopGraceMs ?? STOP_GRACE_MS;
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolveKill) => {
      timer = setTimeout(() => {
        this.options.log(`${this.name} still running ${graceMs / 1000}s after SIGTERM; sending SIGKILL`);
        child.kill('SIGKILL');
        resolveKill();
      }, graceMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    await this.exited;
  }

  logTail(lines = LOG_TAIL_LINES): string {
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** Pids of children still running, for the synchronous last-resort kill on process exit. */
const liveChildren = new Set<number>();
process.on('exit', () => {
  for (const pid of liveChildren) signal(pid, 'SIGKILL');
});

/**
 * Kills processes recorded in `dir/pids` by a previous run that did not stop
 * cleanly. A pid only counts when its command line mentions `dir`, so a
 * recycled pid of an unrelated process is never touched.
 */
export async function killStaleProcesses(dir: string, log: (line: string) => void): Promise<void> {
  const pidDir = join(dir, 'pids');
  if (!existsSync(pidDir)) return;
  const stale: number[] = [];
  for (const file of readdirSync(pidDir)) {
    const pid = Number.parseInt(readFileSync(join(pidDir, file), 'utf8'), 10);
    unlinkSync(join(pidDir, file));
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (!cmdline.includes(dir)) continue;
    log(`killing stale ${file.replace(/\.pid$/, '')} (pid ${pid}) left by a previous run`);
    stale.push(pid);
    signal(pid, 'SIGTERM');
  }
  const deadline = Date.now() + STOP_GRACE_MS;
  while (stale.some(isAlive)) {
    if (Date.now() > deadline) {
      for (const pid of stale) signal(pid, 'SIGKILL');
    }
    await delay(100);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped by its parent) is as good as gone.
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
