import { Duplex, Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerStreams } from '../../provider/container-streams.ts';
import type { SpdySession, SpdyStream } from './spdy/spdy-session.ts';
import type { ChannelSocket } from './websocket-channels.ts';

/**
 * Port-forward as the kubelet serves it (portforward/httpstream.go and
 * websocket.go). Over SPDY the client opens a pair of streams per forwarded
 * connection, an error and a data stream with the same `requestID` and
 * `port` headers; the data stream carries the connection, and a failure is
 * written on the error stream as text, after which both are closed. Over a
 * WebSocket the ports are in the query (`port`), each with a data and an
 * error channel (2i, 2i+1) whose first message is the port, two bytes
 * little-endian; one connection per port.
 */

export interface PortForwardTarget {
  pod: V1Pod;
  streams: ContainerStreams;
  /** Logs a forwarded connection's failure. */
  onError(port: number, err: unknown): void;
}

function failure(target: PortForwardTarget, port: number, err: unknown): string {
  const { name, uid } = target.pod.metadata ?? {};
  const reason = err instanceof Error ? err.message : String(err);
  return `error forwarding port ${port} to pod ${name}, uid ${uid}: ${reason}`;
}

/**
 * Why a port-forward stream is refused (then reset), or undefined: the
 * kubelet's httpStreamReceived checks.
 */
export function refusePortForwardStream(stream: SpdyStream): string | undefined {
  const port = stream.header('port');
  if (!port) return '"port" header is required';
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return `unable to parse "${port}" as a port`;
  const type = stream.header('streamtype');
  if (!type) return '"streamType" header is required';
  if (type !== 'error' && type !== 'data') return `invalid stream type "${type}"`;
  return undefined;
}

/** Serves the pairs of `streams` until the connection ends; a pair not completed within `creationTimeoutMs` fails. */
export async function spdyPortForward(
  session: SpdySession,
  streams: AsyncIterable<SpdyStream>,
  target: PortForwardTarget,
  creationTimeoutMs: number,
): Promise<void> {
  const pairs = new Map<string, { data?: SpdyStream; error?: SpdyStream; timer: NodeJS.Timeout }>();
  const running: Promise<void>[] = [];
  for await (const stream of streams) {
    const type = stream.header('streamtype');
    // Clients older than the requestID header pair streams by id: an error stream, then its data stream.
    const requestId = stream.header('requestid') ?? String(type === 'error' ? stream.id : stream.id - 2);
    const pair = pairs.get(requestId) ?? {
      timer: setTimeout(() => {
        pairs.delete(requestId);
        const error = pair.error;
        if (error)
          void error
            .write(Buffer.from(`timed out waiting for the streams of request ${requestId}`))
            .then(() => error.end());
        pair.data?.end();
      }, creationTimeoutMs),
    };
    pairs.set(requestId, pair);
    if (type === 'error') {
      if (pair.error) {
        void pair.error.write(
          Buffer.from(`error processing stream for request ${requestId}: error stream already assigned`),
        );
        continue;
      }
      pair.error = stream;
      stream.incoming.resume();
    } else {
      if (pair.data) {
        void pair.error?.write(
          Buffer.from(`error processing stream for request ${requestId}: data stream already assigned`),
        );
        continue;
      }
      pair.data = stream;
    }
    const { data, error } = pair;
    if (!data || !error) continue;
    clearTimeout(pair.timer);
    pairs.delete(requestId);
    running.push(forwardPair(session.signal, data, error, target));
  }
  for (const pair of pairs.values()) clearTimeout(pair.timer);
  await Promise.all(running);
}

async function forwardPair(
  signal: AbortSignal,
  data: SpdyStream,
  error: SpdyStream,
  target: PortForwardTarget,
): Promise<void> {
  const port = Number(data.header('port'));
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      data.write(chunk).then(() => callback(), callback);
    },
    final(callback) {
      data.end().then(() => callback(), callback);
    },
  });
  try {
    await target.streams.portForward(
      target.pod,
      port,
      Duplex.from({ readable: data.incoming, writable: output }),
      signal,
    );
  } catch (err) {
    target.onError(port, err);
    await error.write(Buffer.from(failure(target, port, err)));
  } finally {
    await data.end();
    await error.end();
  }
}

/** The kubelet's port query of a WebSocket port-forward. @throws Error naming what is wrong. */
export function websocketPorts(query: Readonly<Record<string, readonly string[]>>): number[] {
  const values = query.port ?? [];
  if (values.length === 0) throw new Error('query parameter "port" is required');
  const ports: number[] = [];
  for (const value of values) {
    if (value.length === 0) throw new Error('query parameter "port" cannot be empty');
    for (const part of value.split(',')) {
      if (!/^\d{1,5}$/.test(part) || Number(part) < 1 || Number(part) > 65535) {
        throw new Error(`unable to parse "${value}" as a port`);
      }
      ports.push(Number(part));
    }
  }
  return ports;
}

/** One connection per port over `socket`, all at once; resolves when all ended. */
export async function websocketPortForward(
  socket: ChannelSocket,
  ports: readonly number[],
  target: PortForwardTarget,
): Promise<void> {
  await Promise.all(
    ports.map(async (port, i) => {
      const dataChannel = i * 2;
      const errorChannel = i * 2 + 1;
      const portBytes = Buffer.alloc(2);
      portBytes.writeUInt16LE(port);
      await socket.write(dataChannel, portBytes);
      await socket.write(errorChannel, portBytes);
      const input = socket.reader(dataChannel);
      if (!input) return;
      try {
        await target.streams.portForward(
          target.pod,
          port,
          Duplex.from({ readable: input, writable: socket.writer(dataChannel) }),
          socket.signal,
        );
      } catch (err) {
        target.onError(port, err);
        await socket.write(errorChannel, Buffer.from(failure(target, port, err)));
      }
    }),
  );
}
