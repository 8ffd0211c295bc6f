import type { Duplex, Readable, Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';

/**
 * The streaming part of the kubelet API a provider may carry: exec, attach
 * and port-forward (`kubectl exec`, `attach`, `port-forward`). The kubelet
 * API speaks the client's protocol (SPDY or WebSocket) and hands the
 * provider plain byte streams.
 */

/** A terminal size the client reports (kubectl sends one at start and one per resize). */
export interface TerminalSize {
  width: number;
  height: number;
}

/** The client's side of an exec or attach. */
export interface ContainerIo {
  /** What the client types; ends when the client closes its stdin. */
  stdin?: Readable;
  stdout?: Writable;
  /** Never with a TTY: the terminal carries both. */
  stderr?: Writable;
  tty: boolean;
  /** Sizes of the client's terminal, as they change (with a TTY). */
  resize?: AsyncIterable<TerminalSize>;
}

/** The container asked for does not run (waiting, or terminated): nothing can be run in it. */
export class ContainerNotRunningError extends Error {
  override readonly name = 'ContainerNotRunningError';
}

export function isContainerNotRunning(err: unknown): err is ContainerNotRunningError {
  return err instanceof ContainerNotRunningError;
}

/**
 * Exec, attach and port-forward into the pods a provider runs. Every call
 * ends once its work ended or `signal` aborted (the client went, or the
 * connection idled out), and leaves nothing of its own behind on the
 * backend: no session, no connection.
 */
export interface ContainerStreams {
  /**
   * Resolves when `container` of `pod` runs, before the kubelet API answers
   * the client's upgrade, so that a refusal is an HTTP error the client shows.
   * @throws ProviderNotFoundError when the provider has no such pod or container.
   * @throws ContainerNotRunningError when the container does not run.
   */
  checkRunning(pod: V1Pod, container: string, signal: AbortSignal): Promise<void>;
  /**
   * Runs `command` in `container` with `io`, and resolves with its exit code
   * once it ended and its output was written to `io`. The client closing
   * stdin closes the command's stdin.
   * @throws ContainerNotRunningError when the container stopped meanwhile.
   */
  exec(
    pod: V1Pod,
    container: string,
    command: string[],
    io: ContainerIo,
    signal: AbortSignal,
  ): Promise<number>;
  /**
   * Attaches `io` to the main process of `container` until it ends or the
   * client goes; the process itself runs on.
   */
  attach(pod: V1Pod, container: string, io: ContainerIo, signal: AbortSignal): Promise<void>;
  /**
   * Relays `stream` to a new TCP connection to `port` on the pod's loopback,
   * in its network namespace, until either side ends.
   * @throws Error with the reason, when nothing listens on the port.
   */
  portForward(pod: V1Pod, port: number, stream: Duplex, signal: AbortSignal): Promise<void>;
}
