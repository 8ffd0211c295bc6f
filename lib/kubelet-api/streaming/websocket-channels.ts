import { Readable, Writable } from 'node:stream';
import type { WebSocket } from 'ws';
import type { ContainerIo } from '../../provider/container-streams.ts';
import type { CommandChannels, CommandOptions } from './command-channels.ts';
import { type CommandOutcome, statusJson, statusText, terminalSizes } from './command-status.ts';

/**
 * The kubelet's WebSocket channel protocols (apiserver's wsstream): each
 * message starts with its channel number, a byte with `channel.k8s.io`, an
 * ASCII digit with `base64.channel.k8s.io` (whose payload is then base64).
 * The `v4.` variants differ only in the exec status: JSON, as over SPDY.
 * The protocol has no way to close one channel: stdin ends with the
 * connection.
 */

export const WEBSOCKET_COMMAND_PROTOCOLS = [
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
];
export const WEBSOCKET_PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

/** The first protocol the client offers that `supported` has ("" when it offers none, binary then). */
export function pickProtocol(offered: ReadonlySet<string>, supported: readonly string[]): string | false {
  if (offered.size === 0) return '';
  for (const protocol of offered) if (supported.includes(protocol)) return protocol;
  return false;
}

/** Channels multiplexed over one WebSocket. */
export class ChannelSocket {
  private readonly readers = new Map<number, Readable>();
  private readonly base64: boolean;
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;

  constructor(
    private readonly ws: WebSocket,
    protocol: string,
    /** The channels the client may write to. */
    readable: readonly number[],
  ) {
    this.base64 = protocol.includes('base64');
    for (const channel of readable) this.readers.set(channel, new Readable({ read() {} }));
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) =>
      this.receive(toBuffer(data), isBinary),
    );
    const end = () => {
      for (const reader of this.readers.values()) reader.push(null);
      this.controller.abort(new Error('the WebSocket closed'));
    };
    ws.on('close', end);
    ws.on('error', end);
  }

  /** What the client writes on `channel` (one of the readable channels). */
  reader(channel: number): Readable | undefined {
    return this.readers.get(channel);
  }

  /** Writes `data` on `channel`; resolves once the socket took it. */
  write(channel: number, data: Buffer): Promise<void> {
    if (this.ws.readyState !== this.ws.OPEN) return Promise.resolve();
    const frame = this.base64
      ? Buffer.from(String.fromCharCode(48 + channel) + data.toString('base64'), 'latin1')
      : Buffer.concat([Buffer.from([channel]), data]);
    return new Promise((resolve) => this.ws.send(frame, { binary: !this.base64 }, () => resolve()));
  }

  writer(channel: number): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.write(channel, chunk).then(() => callback(), callback);
      },
    });
  }

  close(): Promise<void> {
    if (this.ws.readyState === this.ws.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.ws.terminate();
        resolve();
      }, 5_000);
      timer.unref();
      this.ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      this.ws.close(1000);
    });
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (data.length === 0) return;
    let channel = data[0] ?? 0;
    let payload = data.subarray(1);
    if (this.base64 || !isBinary) {
      channel -= 48;
      payload = Buffer.from(payload.toString('latin1'), 'base64');
    }
    this.readers.get(channel)?.push(payload);
  }
}

function toBuffer(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;

/** An exec's or attach's channels over a WebSocket (remotecommand/websocket.go). */
export async function websocketCommandChannels(
  ws: WebSocket,
  protocol: string,
  options: CommandOptions,
): Promise<CommandChannels> {
  const socket = new ChannelSocket(ws, protocol, [STDIN, RESIZE]);
  // An empty message on the lowest channel written to tells the client the connection is set up.
  await socket.write(options.stdout ? STDOUT : options.stderr ? STDERR : ERROR, Buffer.alloc(0));
  const stdin = options.stdin ? socket.reader(STDIN) : undefined;
  const resize = options.tty ? socket.reader(RESIZE) : undefined;
  const stdout = options.stdout ? socket.writer(STDOUT) : undefined;
  const stderr = options.stderr ? socket.writer(STDERR) : undefined;
  const io: ContainerIo = {
    tty: options.tty,
    ...(stdin ? { stdin } : {}),
    ...(stdout ? { stdout } : {}),
    ...(stderr ? { stderr } : {}),
    ...(resize ? { resize: terminalSizes(resize) } : {}),
  };
  return {
    io,
    signal: socket.signal,
    async finish(outcome: CommandOutcome) {
      await Promise.all([stdout, stderr].map((w) => (w ? new Promise((r) => w.end(r)) : undefined)));
      const text = protocol.startsWith('v4.') ? statusJson(outcome) : statusText(outcome);
      if (text) await socket.write(ERROR, Buffer.from(text));
      await socket.close();
    },
  };
}
