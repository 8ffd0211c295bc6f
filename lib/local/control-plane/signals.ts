/**
 * Graceful shutdown of running control planes on SIGINT, SIGTERM and SIGHUP
 * that nobody else handles: a runner with its own handler owns the shutdown
 * order and calls stop() itself (the exit hook in `process.ts` still backs it
 * up). Once they have stopped, the signal is raised again, so the process
 * ends as the signal would have ended it.
 */

interface Stoppable {
  stop(): Promise<void>;
}

const running = new Set<Stoppable>();
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
let installed = false;

/** Stops `plane` on an unhandled signal until {@link forgetOnSignal}. */
export function stopOnSignal(plane: Stoppable): void {
  running.add(plane);
  sync();
}

export function forgetOnSignal(plane: Stoppable): void {
  running.delete(plane);
  sync();
}

function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  void Promise.allSettled([...running].map((plane) => plane.stop())).then(() => {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    installed = false;
    process.kill(process.pid, signal);
  });
}

function sync(): void {
  if (running.size > 0 && !installed) {
    for (const s of SIGNALS) process.on(s, onSignal);
    installed = true;
  } else if (running.size === 0 && installed) {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    installed = false;
  }
}
