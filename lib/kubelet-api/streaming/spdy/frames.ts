/**
 * SPDY/3 framing (the SPDY Protocol draft 3, section 2.2), as kubectl's
 * spdystream speaks it inside an upgrade to `SPDY/3.1`: an 8-byte header,
 * then the payload. A control frame's header holds the version (3) and the
 * type; a data frame's the stream id. Flags and a 24-bit length follow.
 *
 * This module only cuts bytes into frames and writes frames as bytes; the
 * header blocks of SYN_STREAM, SYN_REPLY and HEADERS stay compressed here
 * (header-block.ts reads them, in order). Pure, so that it can be fuzzed:
 * whatever the bytes, {@link FrameReader.push} returns frames or throws
 * {@link SpdyProtocolError}, and never buffers more than one frame's worth.
 */

export const SPDY_VERSION = 3;

export const FrameType = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

/** FLAG_FIN on data, SYN_STREAM, SYN_REPLY and HEADERS frames. */
export const FLAG_FIN = 0x01;
/** FLAG_UNIDIRECTIONAL on SYN_STREAM. */
export const FLAG_UNIDIRECTIONAL = 0x02;

export const RstStatus = {
  protocolError: 1,
  invalidStream: 2,
  refusedStream: 3,
  cancel: 5,
  internalError: 6,
  streamInUse: 8,
  streamAlreadyClosed: 9,
} as const;

export const GoAwayStatus = { ok: 0, protocolError: 1, internalError: 2 } as const;

/**
 * The largest frame payload accepted (1 MiB): kubectl writes at most 32 KiB
 * at a time, so a larger frame is a broken or hostile peer, and the bound
 * keeps one connection's buffering small.
 */
export const MAX_FRAME_PAYLOAD = 1024 * 1024;

export type Frame =
  | { type: 'data'; streamId: number; fin: boolean; data: Buffer }
  | {
      type: 'synStream';
      streamId: number;
      associatedId: number;
      priority: number;
      fin: boolean;
      unidirectional: boolean;
      headerBlock: Buffer;
    }
  | { type: 'synReply'; streamId: number; fin: boolean; headerBlock: Buffer }
  | { type: 'headers'; streamId: number; fin: boolean; headerBlock: Buffer }
  | { type: 'rstStream'; streamId: number; status: number }
  | { type: 'settings'; entries: Array<{ flags: number; id: number; value: number }> }
  | { type: 'ping'; id: number }
  | { type: 'goAway'; lastGoodStreamId: number; status: number }
  | { type: 'windowUpdate'; streamId: number; delta: number }
  /** A control frame of a type SPDY/3 does not define: to be ignored (section 2.2.1). */
  | { type: 'unknown'; frameType: number };

/** The peer broke the framing: the connection cannot go on. */
export class SpdyProtocolError extends Error {
  override readonly name = 'SpdyProtocolError';
}

export function isSpdyProtocolError(err: unknown): err is SpdyProtocolError {
  return err instanceof SpdyProtocolError;
}

const STREAM_ID_MASK = 0x7fffffff;

/** Cuts a byte stream into frames; bytes of an incomplete frame wait for the next push. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  /** @throws SpdyProtocolError when the bytes are not SPDY/3 frames. */
  push(chunk: Buffer): Frame[] {
    this.pending = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const frames: Frame[] = [];
    for (;;) {
      if (this.pending.length < 8) break;
      const length = this.pending.readUInt32BE(4) & 0xffffff;
      if (length > MAX_FRAME_PAYLOAD) {
        throw new SpdyProtocolError(`a frame of ${length} bytes is over the ${MAX_FRAME_PAYLOAD}-byte limit`);
      }
      if (this.pending.length < 8 + length) break;
      const frame = this.pending.subarray(0, 8 + length);
      this.pending = this.pending.subarray(8 + length);
      frames.push(parseFrame(frame));
    }
    return frames;
  }
}

/** One whole frame (header and payload). */
function parseFrame(frame: Buffer): Frame {
  const first = frame.readUInt32BE(0);
  const flags = frame[4] ?? 0;
  const payload = frame.subarray(8);
  if ((first & 0x80000000) === 0) {
    const streamId = first & STREAM_ID_MASK;
    if (streamId === 0) throw new SpdyProtocolError('a data frame on stream 0');
    // Copied out, so that a stream holding it does not keep the whole read buffer alive.
    return { type: 'data', streamId, fin: (flags & FLAG_FIN) !== 0, data: Buffer.from(payload) };
  }
  const version = (first >>> 16) & 0x7fff;
  if (version !== SPDY_VERSION) throw new SpdyProtocolError(`SPDY version ${version} is not 3`);
  return parseControl(first & 0xffff, flags, payload);
}

/** A control frame's payload, by type. */
function parseControl(type: number, flags: number, payload: Buffer): Frame {
  const need = (n: number, what: string) => {
    if (payload.length < n)
      throw new SpdyProtocolError(`a ${what} frame of ${payload.length} bytes is too short`);
  };
  const streamIdAt = (offset: number, what: string) => {
    const id = payload.readUInt32BE(offset) & STREAM_ID_MASK;
    if (id === 0) throw new SpdyProtocolError(`a ${what} frame on stream 0`);
    return id;
  };
  const fin = (flags & FLAG_FIN) !== 0;
  switch (type) {
    case FrameType.synStream:
      need(10, 'SYN_STREAM');
      return {
        type: 'synStream',
        streamId: streamIdAt(0, 'SYN_STREAM'),
        associatedId: payload.readUInt32BE(4) & STREAM_ID_MASK,
        priority: (payload[8] ?? 0) >>> 5,
        fin,
        unidirectional: (flags & FLAG_UNIDIRECTIONAL) !== 0,
        headerBlock: Buffer.from(payload.subarray(10)),
      };
    case FrameType.synReply:
      need(4, 'SYN_REPLY');
      return {
        type: 'synReply',
        streamId: streamIdAt(0, 'SYN_REPLY'),
        fin,
        headerBlock: Buffer.from(payload.subarray(4)),
      };
    case FrameType.headers:
      need(4, 'HEADERS');
      return {
        type: 'headers',
        streamId: streamIdAt(0, 'HEADERS'),
        fin,
        headerBlock: Buffer.from(payload.subarray(4)),
      };
    case FrameType.rstStream:
      if (payload.length !== 8) throw new SpdyProtocolError('a RST_STREAM frame must be 8 bytes');
      return { type: 'rstStream', streamId: streamIdAt(0, 'RST_STREAM'), status: payload.readUInt32BE(4) };
    case FrameType.settings: {
      need(4, 'SETTINGS');
      const count = payload.readUInt32BE(0);
      if (payload.length !== 4 + count * 8)
        throw new SpdyProtocolError('a SETTINGS frame whose length does not match its count');
      const entries = [];
      for (let i = 0; i < count; i++) {
        const word = payload.readUInt32BE(4 + i * 8);
        entries.push({ flags: word >>> 24, id: word & 0xffffff, value: payload.readUInt32BE(8 + i * 8) });
      }
      return { type: 'settings', entries };
    }
    case FrameType.ping:
      if (payload.length !== 4) throw new SpdyProtocolError('a PING frame must be 4 bytes');
      return { type: 'ping', id: payload.readUInt32BE(0) };
    case FrameType.goAway:
      if (payload.length !== 8) throw new SpdyProtocolError('a GOAWAY frame must be 8 bytes');
      return {
        type: 'goAway',
        lastGoodStreamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        status: payload.readUInt32BE(4),
      };
    case FrameType.windowUpdate:
      if (payload.length !== 8) throw new SpdyProtocolError('a WINDOW_UPDATE frame must be 8 bytes');
      return {
        type: 'windowUpdate',
        streamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        delta: payload.readUInt32BE(4) & STREAM_ID_MASK,
      };
    default:
      return { type: 'unknown', frameType: type };
  }
}

function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  if (payload.length > 0xffffff) throw new RangeError('a SPDY frame payload must be under 16 MiB');
  const header = Buffer.alloc(8);
  header.writeUInt32BE((0x8000 | SPDY_VERSION) * 0x10000 + type);
  header.writeUInt32BE(flags * 0x1000000 + payload.length, 4);
  return Buffer.concat([header, payload]);
}

export function dataFrame(streamId: number, data: Buffer, fin: boolean): Buffer {
  if (data.length > 0xffffff) throw new RangeError('a SPDY frame payload must be under 16 MiB');
  const header = Buffer.alloc(8);
  header.writeUInt32BE(streamId & STREAM_ID_MASK);
  header.writeUInt32BE((fin ? FLAG_FIN : 0) * 0x1000000 + data.length, 4);
  return Buffer.concat([header, data]);
}

function streamIdWord(streamId: number): Buffer {
  const word = Buffer.alloc(4);
  word.writeUInt32BE(streamId & STREAM_ID_MASK);
  return word;
}

export function synStreamFrame(streamId: number, headerBlock: Buffer, fin: boolean): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt32BE(streamId & STREAM_ID_MASK);
  return controlFrame(FrameType.synStream, fin ? FLAG_FIN : 0, Buffer.concat([fixed, headerBlock]));
}

export function synReplyFrame(streamId: number, headerBlock: Buffer, fin: boolean): Buffer {
  return controlFrame(
    FrameType.synReply,
    fin ? FLAG_FIN : 0,
    Buffer.concat([streamIdWord(streamId), headerBlock]),
  );
}

export function headersFrame(streamId: number, headerBlock: Buffer, fin: boolean): Buffer {
  return controlFrame(
    FrameType.headers,
    fin ? FLAG_FIN : 0,
    Buffer.concat([streamIdWord(streamId), headerBlock]),
  );
}

export function rstStreamFrame(streamId: number, status: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(streamId & STREAM_ID_MASK);
  payload.writeUInt32BE(status, 4);
  return controlFrame(FrameType.rstStream, 0, payload);
}

export function pingFrame(id: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(id >>> 0);
  return controlFrame(FrameType.ping, 0, payload);
}

export function goAwayFrame(lastGoodStreamId: number, status: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(lastGoodStreamId & STREAM_ID_MASK);
  payload.writeUInt32BE(status, 4);
  return controlFrame(FrameType.goAway, 0, payload);
}

export function settingsFrame(entries: ReadonlyArray<{ flags: number; id: number; value: number }>): Buffer {
  const payload = Buffer.alloc(4 + entries.length * 8);
  payload.writeUInt32BE(entries.length);
  entries.forEach((e, i) => {
    payload.writeUInt32BE(((e.flags & 0xff) * 0x1000000 + (e.id & 0xffffff)) >>> 0, 4 + i * 8);
    payload.writeUInt32BE(e.value >>> 0, 8 + i * 8);
  });
  return controlFrame(FrameType.settings, 0, payload);
}

export function windowUpdateFrame(streamId: number, delta: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(streamId & STREAM_ID_MASK);
  payload.writeUInt32BE(delta & STREAM_ID_MASK, 4);
  return controlFrame(FrameType.windowUpdate, 0, payload);
}
