import { Writable } from 'node:stream';
import type { ContainerIo } from '../../provider/container-streams.ts';
import type { CommandChannels, CommandOptions } from './command-channels.ts';
import { type CommandOutcome, statusJson, statusText, terminalSizes } from './command-status.ts';
import type { SpdySession, SpdyStream } from './spdy/spdy-session.ts';

/** The remote command protocols the kubelet accepts over SPDY, newest first (its SupportedStreamingProtocols). */
export const SPDY_COMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io'];

/**
 * An exec or attach over SPDY (remotecommand/httpstream.go): the client
 * opens one stream per channel, named by its `streamType` header (error,
 * stdin, stdout, stderr, and resize from v3 on with a TTY), and the
 * command starts once all the expected ones are there. A client that does
 * not open them within `creationTimeoutMs` gets its connection closed.
 */
export function spdyCommandChannels(
  session: SpdySession,
  streams: AsyncIterable<SpdyStream>,
  protocol: string,
  options: CommandOptions,
  creationTimeoutMs: number,
): Promise<CommandChannels> {
  const resizing = options.tty && protocol !== 'v2.channel.k8s.io';
  const expected = 1 + [options.stdin, options.stdout, options.stderr, resizing].filter(Boolean).length;
  const found = new Map<string, SpdyStream>();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new Error(`the client opened ${found.size} of ${expected} streams within ${creationTimeoutMs} ms`),
      );
    }, creationTimeoutMs);
    const done = (err?: Error) => {
      clearTimeout(timer);
      if (err) reject(err);
    };
    session.signal.addEventListener(
      'abort',
      () => done(new Error('the connection ended before its streams were opened')),
      {
        once: true,
      },
    );
    void (async () => {
      for await (const stream of streams) {
        const type = stream.header('streamtype') ?? '';
        if (!['error', 'stdin', 'stdout', 'stderr', 'resize'].includes(type) || found.has(type)) {
          stream.incoming.resume();
          continue;
        }
        found.set(type, stream);
        if (type !== 'stdin' && type !== 'resize') stream.incoming.resume();
        if (found.size === expected) {
          done();
          resolve(channels(session, found, protocol, options));
          return;
        }
      }
    })();
  });
}

function channels(
  session: SpdySession,
  found: Map<string, SpdyStream>,
  protocol: string,
  options: CommandOptions,
): CommandChannels {
  const writer = (stream: SpdyStream | undefined) =>
    stream
      ? new Writable({
          write(chunk: Buffer, _encoding, callback) {
            stream.write(chunk).then(() => callback(), callback);
          },
        })
      : undefined;
  const stdin = options.stdin ? found.get('stdin')?.incoming : undefined;
  const stdout = writer(found.get('stdout'));
  const stderr = options.tty ? undefined : writer(found.get('stderr'));
  const resize = found.get('resize')?.incoming;
  const io: ContainerIo = {
    tty: options.tty,
    ...(stdin ? { stdin } : {}),
    ...(stdout ? { stdout } : {}),
    ...(stderr ? { stderr } : {}),
    ...(resize ? { resize: terminalSizes(resize) } : {}),
  };
  return {
    io,
    signal: session.signal,
    async finish(outcome: CommandOutcome) {
      const error = found.get('error');
      const text = protocol === 'v4.channel.k8s.io' ? statusJson(outcome) : statusText(outcome);
      // Output first: the streams' frames already queued go out before the status and the ends.
      await Promise.all([stdout, stderr].map((w) => (w ? new Promise((r) => w.end(r)) : undefined)));
      if (error && text) await error.write(Buffer.from(text));
      await Promise.all([...found.values()].map((s) => s.end()));
      await session.close();
    },
  };
}
