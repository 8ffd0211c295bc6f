import type { ContainerIo } from '../../provider/container-streams.ts';
import type { CommandOutcome } from './command-status.ts';

/** Which streams an exec or attach asked for: the kubelet's query (`input`, `output`, `error`, `tty`). */
export interface CommandOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** A request's stream options are unusable; the message says why. */
export class CommandOptionsError extends Error {
  override readonly name = 'CommandOptionsError';
}

/**
 * The kubelet's remotecommand NewOptions: `1` turns a stream on; a TTY
 * carries stderr on stdout, so stderr is dropped with one.
 * @throws CommandOptionsError when no stream is asked for.
 */
export function commandOptions(query: Readonly<Record<string, readonly string[]>>): CommandOptions {
  const on = (name: string) => query[name]?.[0] === '1';
  const tty = on('tty');
  const options = { stdin: on('input'), stdout: on('output'), stderr: on('error') && !tty, tty };
  if (!options.stdin && !options.stdout && !options.stderr) {
    throw new CommandOptionsError('you must specify at least 1 of stdin, stdout, stderr');
  }
  return options;
}

/** An exec's or attach's streams once the client opened them, whatever the protocol. */
export interface CommandChannels {
  io: ContainerIo;
  /** Aborts when the connection ends (the client went, or it idled out). */
  signal: AbortSignal;
  /** Reports the outcome on the error stream as the negotiated protocol does, then ends the connection. */
  finish(outcome: CommandOutcome): Promise<void>;
}
