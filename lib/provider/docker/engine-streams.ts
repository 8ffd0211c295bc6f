import { once } from 'node:events';
import type { Duplex, Readable, Writable } from 'node:stream';
import type { ContainerIo, TerminalSize } from '../container-streams.ts';

/**
 * Moving bytes between a client's streams and a hijacked engine connection
 * (exec start, attach): the engine's output, multiplexed in frames without
 * a TTY (an 8-byte header: stream 1 or 2, three zero bytes, a big-endian
 * length), goes to stdout and stderr; stdin goes in, and its end half-closes
 * the connection, which closes the process's stdin (Docker Engine and
 * Podman both do). Every write waits for its reader, so a slow client slows
 * the engine, never the process's memory.
 */

/** Splits multiplexed engine output into its frames' payloads, by stream. */
export class EngineDemuxer {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Array<{ stream: number; data: Buffer }> {
    this.pending = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Array<{ stream: number; data: Buffer }> = [];
    while (this.pending.length >= 8) {
      const length = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + length) break;
      out.push({ stream: this.pending[0] ?? 0, data: this.pending.subarray(8, 8 + length) });
      this.pending = this.pending.subarray(8 + length);
    }
    return out;
  }
}

/** Writes `data` to `target` and waits while its buffer is full, or until `signal` aborts. */
export async function writeTo(target: Writable, data: Buffer, signal: AbortSignal): Promise<void> {
  if (data.length === 0 || target.destroyed || target.writableEnded) return;
  if (target.write(data)) return;
  await Promise.race([
    once(target, 'drain', { signal }).catch(() => undefined),
    once(target, 'close').catch(() => undefined),
  ]);
}

/**
 * Relays `io` over `engine` until the engine's output ends (the process
 * exited, or the engine closed the connection) or `signal` aborts. On an
 * abort the engine's stdin is closed first, so that a command reading it
 * ends, and the connection is dropped `dropAfterMs` later.
 */
export async function relayEngine(
  engine: Duplex,
  io: ContainerIo,
  signal: AbortSignal,
  resize: (size: TerminalSize) => Promise<void>,
  dropAfterMs = 2_000,
): Promise<void> {
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  let dropTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    engine.end();
    dropTimer = setTimeout(() => engine.destroy(), dropAfterMs);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  engine.on('error', () => undefined);
  if (io.stdin) void pumpStdin(io.stdin, engine, both);
  if (io.resize) void applyResizes(io.resize, resize, both);
  try {
    await pumpOutput(engine, io, both);
  } catch (err) {
    // The connection dropped on an abort ends the relay; any other break is the engine's failure.
    if (!signal.aborted) throw err;
  } finally {
    stop.abort();
    signal.removeEventListener('abort', onAbort);
    if (dropTimer) clearTimeout(dropTimer);
    engine.destroy();
  }
}

async function pumpOutput(engine: Duplex, io: ContainerIo, signal: AbortSignal): Promise<void> {
  const demuxer = io.tty ? undefined : new EngineDemuxer();
  const ended = new Promise<void>((resolve) => {
    signal.addEventListener('abort', () => resolve(), { once: true });
    engine.once('close', () => resolve());
  });
  const iterator = engine[Symbol.asyncIterator]();
  for (;;) {
    const next = await Promise.race([iterator.next(), ended.then(() => ({ done: true, value: undefined }))]);
    if (next.done) return;
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as Uint8Array);
    if (!demuxer) {
      if (io.stdout) await writeTo(io.stdout, chunk, signal);
      continue;
    }
    for (const frame of demuxer.push(chunk)) {
      const target = frame.stream === 2 ? io.stderr : io.stdout;
      if (target) await writeTo(target, frame.data, signal);
    }
  }
}

async function pumpStdin(stdin: Readable, engine: Duplex, signal: AbortSignal): Promise<void> {
  try {
    for await (const chunk of stdin) {
      if (signal.aborted || engine.destroyed) return;
      await writeTo(engine, Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk), signal);
    }
    if (!signal.aborted && !engine.destroyed) engine.end();
  } catch {
    // The client's stdin broke: the connection's end says the rest.
  }
}

async function applyResizes(
  sizes: AsyncIterable<TerminalSize>,
  resize: (size: TerminalSize) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  try {
    for await (const size of sizes) {
      if (signal.aborted) return;
      await resize(size).catch(() => undefined);
    }
  } catch {
    // A broken resize stream leaves the terminal at its last size.
  }
}
