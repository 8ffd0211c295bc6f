import { type Duplex, Readable } from 'node:stream';
import {
  dataFrame,
  type Frame,
  FrameReader,
  GoAwayStatus,
  goAwayFrame,
  isSpdyProtocolError,
  pingFrame,
  RstStatus,
  rstStreamFrame,
  SpdyProtocolError,
  synReplyFrame,
} from './frames.ts';
import { HeaderCompressor, HeaderDecompressor, type SpdyHeaders } from './header-block.ts';

/**
 * The server side of a SPDY/3.1 connection as kubectl's spdystream opens
 * it after a `101 Switching Protocols`: the client opens every stream (odd
 * ids, SYN_STREAM with its headers), the server answers each with a
 * SYN_REPLY, and both sides send data frames until each half is finished
 * (FIN) or the stream is reset (RST_STREAM).
 *
 * spdystream does no flow control (it neither sends nor honours
 * WINDOW_UPDATE), so none is done here either: reading waits while a
 * stream's reader has a full buffer, and writing waits for the socket to
 * drain. The connection ends at the first framing error (GOAWAY with
 * PROTOCOL_ERROR), when the client goes, or after `idleTimeoutMs` without a
 * byte read or written; {@link SpdySession.signal} aborts then.
 */

export interface SpdySessionOptions {
  /**
   * A stream the client opened, answered with a SYN_REPLY unless this
   * returns a reason to refuse it (then reset, as the kubelet resets a
   * stream its handler rejects).
   */
  onStream(stream: SpdyStream): string | undefined;
  /** The connection ends after this long without a byte read or written. */
  idleTimeoutMs: number;
  /** How long {@link SpdySession.close} waits for the client to take the last frames before cutting. */
  closeGraceMs?: number;
}

/** Buffered per stream before reading the connection waits for the stream's reader. */
const STREAM_BUFFER = 256 * 1024;
/** Data frames are cut to this size, so that one stream's write does not hold the others back long. */
const MAX_DATA_FRAME = 32 * 1024;

export class SpdySession {
  private readonly reader = new FrameReader();
  private readonly inflate = new HeaderDecompressor();
  private readonly deflate = new HeaderCompressor();
  private readonly streams = new Map<number, SpdyStream>();
  private readonly controller = new AbortController();
  private writing: Promise<void> = Promise.resolve();
  private lastStreamId = 0;
  private closing = false;
  private resume: (() => void) | undefined;

  /** Aborts when the connection ends, with the reason. */
  readonly signal: AbortSignal = this.controller.signal;

  constructor(
    private readonly socket: Duplex,
    private readonly options: SpdySessionOptions,
  ) {
    idleTimeout(socket, options.idleTimeoutMs, () =>
      this.destroy(new Error(`no byte read or written for ${options.idleTimeoutMs} ms`)),
    );
    socket.on('error', (err: Error) => this.destroy(err));
    socket.on('close', () => this.destroy(new Error('the client closed the connection')));
    void this.readLoop();
  }

  /** Ends the connection: GOAWAY, resets of the streams still open, the socket's end; cut after the grace. */
  close(): Promise<void> {
    if (this.closing || this.signal.aborted) return this.writing;
    this.closing = true;
    for (const stream of this.streams.values()) stream.resetIfOpen();
    this.enqueue(async () => goAwayFrame(this.lastStreamId, GoAwayStatus.ok));
    const done = this.writing.then(() => {
      this.socket.end();
    });
    const grace = setTimeout(
      () => this.destroy(new Error('the client did not close the connection after GOAWAY')),
      this.options.closeGraceMs ?? 5_000,
    );
    grace.unref();
    this.signal.addEventListener('abort', () => clearTimeout(grace), { once: true });
    return done;
  }

  /** Drops the connection at once. */
  destroy(reason: Error): void {
    if (this.signal.aborted) return;
    this.controller.abort(reason);
    for (const stream of this.streams.values()) stream.abandon(reason);
    this.streams.clear();
    this.inflate.close();
    this.deflate.close();
    this.resume?.();
    this.socket.destroy();
  }

  /** @internal Writes a frame built by `build` after every frame enqueued before it. */
  enqueue(build: () => Promise<Buffer>): Promise<void> {
    const next = this.writing.then(async () => {
      if (this.signal.aborted) return;
      const bytes = await build();
      if (this.signal.aborted) return;
      if (!this.socket.write(bytes)) await this.drained();
    });
    this.writing = next.catch((err: unknown) => this.destroy(asError(err)));
    return this.writing;
  }

  /** @internal */
  replyHeaders(headers: SpdyHeaders): Promise<Buffer> {
    return this.deflate.compress(headers);
  }

  /** @internal The reader of a stream took from its buffer: reading the connection may go on. */
  wake(): void {
    const resume = this.resume;
    this.resume = undefined;
    resume?.();
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off('drain', done);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  private async readLoop(): Promise<void> {
    try {
      for await (const chunk of this.socket) {
        if (this.signal.aborted) return;
        for (const frame of this.reader.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))) {
          await this.handle(frame);
          if (this.signal.aborted) return;
        }
      }
    } catch (err) {
      if (isSpdyProtocolError(err) && !this.signal.aborted) {
        this.enqueue(async () => goAwayFrame(this.lastStreamId, GoAwayStatus.protocolError));
        void this.writing.then(() => this.destroy(err));
        return;
      }
      this.destroy(asError(err));
    }
  }

  private async handle(frame: Frame): Promise<void> {
    switch (frame.type) {
      case 'synStream': {
        const headers = await this.inflate.decompress(frame.headerBlock);
        if (frame.streamId % 2 === 0 || frame.streamId <= this.lastStreamId) {
          throw new SpdyProtocolError(`stream id ${frame.streamId} is not a new client stream`);
        }
        this.lastStreamId = frame.streamId;
        if (this.closing) {
          this.enqueue(async () => rstStreamFrame(frame.streamId, RstStatus.refusedStream));
          return;
        }
        const stream = new SpdyStream(this, frame.streamId, headers, frame.fin || frame.unidirectional);
        this.streams.set(frame.streamId, stream);
        const refused = this.options.onStream(stream);
        if (refused) stream.reset(RstStatus.cancel);
        else stream.reply();
        return;
      }
      case 'data': {
        const stream = this.streams.get(frame.streamId);
        if (!stream) return;
        if (!stream.receive(frame.data, frame.fin)) {
          await new Promise<void>((resolve) => {
            this.resume = resolve;
          });
        }
        return;
      }
      case 'rstStream':
        this.streams.get(frame.streamId)?.abandon(new Error(`the client reset stream ${frame.streamId}`));
        return;
      case 'headers':
        // Read in turn, so that the compression context stays in step; kubectl sends none.
        await this.inflate.decompress(frame.headerBlock);
        if (frame.fin) this.streams.get(frame.streamId)?.receive(Buffer.alloc(0), true);
        return;
      case 'synReply':
        await this.inflate.decompress(frame.headerBlock);
        throw new SpdyProtocolError('a SYN_REPLY for a stream the server never opened');
      case 'ping':
        this.enqueue(async () => pingFrame(frame.id));
        return;
      case 'goAway':
        // The client opens no more streams; those open go on until they end.
        return;
      default:
        // SETTINGS, WINDOW_UPDATE and unknown control frames change nothing here.
        return;
    }
  }
}

/** One stream of a {@link SpdySession}, opened by the client. */
export class SpdyStream {
  /** What the client sends on this stream; ends at its FIN or reset. */
  readonly incoming: Readable;
  private sentFin = false;
  private reset_ = false;
  private receivedFin: boolean;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    readonly headers: SpdyHeaders,
    finished: boolean,
  ) {
    this.receivedFin = finished;
    this.incoming = new Readable({ highWaterMark: STREAM_BUFFER, read: () => session.wake() });
    if (finished) this.incoming.push(null);
  }

  /** The first value of header `name` (lower-case). */
  header(name: string): string | undefined {
    return this.headers[name]?.[0];
  }

  /** Writes `data` (cut into frames); resolves once the socket took it, or at once if the stream is done. */
  async write(data: Buffer): Promise<void> {
    for (let offset = 0; offset < data.length; offset += MAX_DATA_FRAME) {
      if (this.sentFin || this.reset_) return;
      const piece = data.subarray(offset, offset + MAX_DATA_FRAME);
      await this.session.enqueue(async () => dataFrame(this.id, piece, false));
    }
  }

  /** Half-closes the stream (FIN): the client reads EOF. */
  end(): Promise<void> {
    if (this.sentFin || this.reset_) return Promise.resolve();
    this.sentFin = true;
    const sent = this.session.enqueue(async () => dataFrame(this.id, Buffer.alloc(0), true));
    this.forgetIfDone();
    return sent;
  }

  /** Resets the stream: neither side uses it again. */
  reset(status: number = RstStatus.cancel): void {
    if (this.reset_) return;
    this.reset_ = true;
    this.session.enqueue(async () => rstStreamFrame(this.id, status));
    this.abandon(new Error(`stream ${this.id} was reset`));
  }

  /** @internal */
  reply(): void {
    this.session.enqueue(async () => synReplyFrame(this.id, await this.session.replyHeaders({}), false));
  }

  /** @internal Resets the stream unless both sides already finished it. */
  resetIfOpen(): void {
    if (!(this.sentFin && this.receivedFin)) this.reset();
  }

  /** @internal Data from the client; false when the reader's buffer is full. */
  receive(data: Buffer, fin: boolean): boolean {
    if (this.receivedFin || this.reset_) return true;
    const room = data.length === 0 ? true : this.incoming.push(data);
    if (fin) {
      this.receivedFin = true;
      this.incoming.push(null);
      this.forgetIfDone();
    }
    return room;
  }

  /** @internal The stream is over for this side without a frame: reset by the client, or the connection ended. */
  abandon(_reason: Error): void {
    this.reset_ = true;
    if (!this.receivedFin) {
      this.receivedFin = true;
      this.incoming.push(null);
    }
    this.session.forget(this.id);
    this.session.wake();
  }

  private forgetIfDone(): void {
    if (this.sentFin && this.receivedFin) this.session.forget(this.id);
  }
}

/** A socket's own inactivity timeout (net.Socket's); a plain duplex (tests) has none. */
export function idleTimeout(socket: Duplex, ms: number, onIdle: () => void): void {
  if ('setTimeout' in socket && typeof socket.setTimeout === 'function') socket.setTimeout(ms, onIdle);
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
