import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LambdaContextOptions } from './lambda-context.ts';
import { reviveError, type SerializedError } from './serialized-error.ts';

/** What the parent sends the child: one invocation. */
export interface ChildRequest {
  /** File path or file URL of the handler module. */
  module: string;
  exportName: string;
  event: unknown;
  context: Required<Pick<LambdaContextOptions, 'functionName' | 'timeoutMs' | 'requestId' | 'deadlineMs'>> &
    Pick<LambdaContextOptions, 'memoryMb' | 'region' | 'accountId'>;
}

export type ChildResponse =
  | { type: 'ready' }
  | { type: 'result'; status: 'ok'; result: unknown }
  | { type: 'result'; status: 'error'; error: SerializedError };

export type ChildOutcome = { status: 'ok'; result: unknown } | { status: 'error'; error: Error };

export interface ChildInvocation {
  readonly pid: number | undefined;
  /** Settles once: with the handler's outcome, or with an exit error if the process died first. */
  readonly outcome: Promise<ChildOutcome>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  /** SIGKILL: the truest "sandbox gone". Safe to call more than once. */
  kill(): void;
}

const ENTRY = fileURLToPath(new URL('./child-entry.ts', import.meta.url));

/**
 * Forks a fresh Node process (with tsx's loader, so TypeScript handlers load as
 * they do under the test runner) that runs one invocation. The child shares
 * stdout/stderr with the parent so its logs show, and exits when the parent's
 * IPC channel closes, so an interrupted test run leaves no stray process.
 */
export function startChildInvocation(request: ChildRequest, env?: Record<string, string>): ChildInvocation {
  const child: ChildProcess = fork(ENTRY, [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'json',
  });
  const outcome = new Promise<ChildOutcome>((resolve) => {
    child.on('message', (message: ChildResponse) => {
      if (message.type === 'ready') {
        child.send(request);
      } else if (message.status === 'ok') {
        resolve({ status: 'ok', result: message.result });
      } else {
        resolve({ status: 'error', error: reviveError(message.error) });
      }
    });
    // Lambda reports a runtime that died mid-invocation as Runtime.ExitError.
    child.on('exit', (code, signal) => {
      const error = new Error(
        `Runtime exited ${signal ? `with signal: ${signal}` : `with error: exit status ${code}`}`,
      );
      error.name = 'Runtime.ExitError';
      resolve({ status: 'error', error });
    });
    child.on('error', (error) => resolve({ status: 'error', error }));
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else {
      child.once('exit', () => resolve());
      // A process that failed to spawn has no pid and never emits 'exit'.
      child.once('error', () => child.pid === undefined && resolve());
    }
  });
  return {
    pid: child.pid,
    outcome,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
