import { constants, createDeflate, createInflate, type Deflate, type Inflate } from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.ts';
import { SpdyProtocolError } from './frames.ts';

/**
 * SPDY/3 header blocks (draft 3, section 2.6.10): a count, then each name
 * and value with a 32-bit length; several values of one name joined by NUL.
 * Each direction of a connection compresses its blocks with one zlib stream
 * (the SPDY dictionary, a sync flush after each block), so blocks must be
 * read and written in the order they travel.
 */

/** Header names (lower-case) to their values. */
export type SpdyHeaders = Record<string, string[]>;

/** The largest header block accepted once inflated: kubectl's are a few dozen bytes. */
export const MAX_HEADER_BLOCK = 64 * 1024;

export function encodeHeaderBlock(headers: Readonly<SpdyHeaders>): Buffer {
  const parts: Buffer[] = [];
  const entries = Object.entries(headers);
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length);
  parts.push(count);
  for (const [name, values] of entries) {
    for (const text of [name.toLowerCase(), values.join('\0')]) {
      const bytes = Buffer.from(text, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      parts.push(length, bytes);
    }
  }
  return Buffer.concat(parts);
}

/** @throws SpdyProtocolError when `block` is not a well-formed header block. */
export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  let offset = 0;
  const take = (n: number, what: string): Buffer => {
    if (offset + n > block.length) throw new SpdyProtocolError(`header block cut short in ${what}`);
    const out = block.subarray(offset, offset + n);
    offset += n;
    return out;
  };
  const length = (what: string) => take(4, what).readUInt32BE(0);
  const count = length('the count');
  const headers: SpdyHeaders = {};
  for (let i = 0; i < count; i++) {
    const name = take(length('a name length'), 'a name').toString('utf8').toLowerCase();
    if (name.length === 0) throw new SpdyProtocolError('a header with an empty name');
    if (Object.hasOwn(headers, name)) throw new SpdyProtocolError(`header ${name} appears twice`);
    headers[name] = take(length('a value length'), 'a value').toString('utf8').split('\0');
  }
  if (offset !== block.length) throw new SpdyProtocolError('bytes after the last header');
  return headers;
}

/** The first value of `name`, if any. */
export function headerValue(headers: Readonly<SpdyHeaders>, name: string): string | undefined {
  return headers[name.toLowerCase()]?.[0];
}

/** Runs `block` through `stream` and returns what came out by the sync flush. */
function pass(stream: Deflate | Inflate, block: Buffer, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (stream.destroyed) {
      reject(new SpdyProtocolError('the header compression of this connection ended'));
      return;
    }
    const out: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      out.push(chunk);
      if (size > limit) fail(new SpdyProtocolError(`a header block inflates to over ${limit} bytes`));
    };
    const onError = (err: Error) =>
      fail(err instanceof SpdyProtocolError ? err : new SpdyProtocolError(`header block: ${err.message}`));
    const done = () => {
      stream.off('data', onData);
      stream.off('error', onError);
    };
    const fail = (err: Error) => {
      done();
      reject(err);
    };
    stream.on('data', onData);
    stream.on('error', onError);
    stream.write(block);
    stream.flush(constants.Z_SYNC_FLUSH, () => {
      // The flush's output is pushed before its callback runs; let the last 'data' events through.
      setImmediate(() => {
        if (size > limit) return;
        done();
        resolve(Buffer.concat(out));
      });
    });
  });
}

/**
 * One direction's header compression: blocks go through one zlib stream in
 * the order of the calls (each call waits for the previous one).
 */
export class HeaderCompressor {
  private readonly deflate = createDeflate({ dictionary: SPDY3_DICTIONARY });
  private last: Promise<unknown> = Promise.resolve();

  compress(headers: Readonly<SpdyHeaders>): Promise<Buffer> {
    const block = encodeHeaderBlock(headers);
    const next = this.last.then(() => pass(this.deflate, block, Number.POSITIVE_INFINITY));
    this.last = next.catch(() => undefined);
    return next;
  }

  close(): void {
    this.deflate.destroy();
  }
}

/** The peer's header blocks, inflated and read in the order of the calls. */
export class HeaderDecompressor {
  private readonly inflate = createInflate({ dictionary: SPDY3_DICTIONARY });
  private last: Promise<unknown> = Promise.resolve();

  /** @throws SpdyProtocolError when the block does not inflate to a header block. */
  decompress(block: Buffer): Promise<SpdyHeaders> {
    const next = this.last.then(async () =>
      decodeHeaderBlock(await pass(this.inflate, block, MAX_HEADER_BLOCK)),
    );
    this.last = next.catch(() => undefined);
    return next;
  }

  close(): void {
    this.inflate.destroy();
  }
}
