/**
 * The streaming protocols' own parts: SPDY/3 framing and header blocks (with
 * their zlib context), a SPDY session fed by a client made of the same
 * framer, the engine's output demuxer, and the query parsers, fuzzed
 * (fast-check): whatever the bytes, a parser returns or throws its protocol
 * error, and a session ends with its connection closed, never an escaped
 * exception.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Duplex, PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CommandOptionsError, commandOptions } from '../../lib/kubelet-api/streaming/command-channels.ts';
import { statusJson, terminalSizes } from '../../lib/kubelet-api/streaming/command-status.ts';
import { websocketPorts } from '../../lib/kubelet-api/streaming/port-forward.ts';
import { SPDY3_DICTIONARY } from '../../lib/kubelet-api/streaming/spdy/dictionary.ts';
import {
  dataFrame,
  type Frame,
  FrameReader,
  isSpdyProtocolError,
  MAX_FRAME_PAYLOAD,
  pingFrame,
  rstStreamFrame,
  settingsFrame,
  synStreamFrame,
  windowUpdateFrame,
} from '../../lib/kubelet-api/streaming/spdy/frames.ts';
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  HeaderCompressor,
  HeaderDecompressor,
  type SpdyHeaders,
} from '../../lib/kubelet-api/streaming/spdy/header-block.ts';
import { SpdySession, type SpdyStream } from '../../lib/kubelet-api/streaming/spdy/spdy-session.ts';
import { EngineDemuxer } from '../../lib/provider/docker/engine-streams.ts';

/** A connected pair of duplexes, as a socket's two ends. */
function socketPair(): [Duplex, Duplex] {
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  const server = Duplex.from({ readable: toServer, writable: toClient });
  const client = Duplex.from({ readable: toClient, writable: toServer });
  return [server, client];
}

/** Reads frames from `client` as they come, decompressing header blocks in order. */
function frameCollector(client: Duplex) {
  const reader = new FrameReader();
  const frames: Frame[] = [];
  client.on('data', (chunk: Buffer) => frames.push(...reader.push(chunk)));
  return frames;
}

async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('SPDY/3 framing', () => {
  it('the dictionary is the one the SPDY/3 draft gives', () => {
    assert.equal(SPDY3_DICTIONARY.length, 1423);
    assert.equal(
      createHash('sha256').update(SPDY3_DICTIONARY).digest('hex'),
      '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02',
    );
  });

  it('frames written are read back whole, however the bytes are cut', () => {
    const bytes = Buffer.concat([
      synStreamFrame(1, Buffer.from('abc'), false),
      dataFrame(1, Buffer.from('hello'), true),
      rstStreamFrame(3, 5),
      pingFrame(7),
      settingsFrame([{ flags: 1, id: 4, value: 1000 }]),
      windowUpdateFrame(1, 65536),
    ]);
    for (const cut of [1, 3, 8, 11, bytes.length]) {
      const reader = new FrameReader();
      const frames: Frame[] = [];
      for (let i = 0; i < bytes.length; i += cut) frames.push(...reader.push(bytes.subarray(i, i + cut)));
      assert.deepEqual(
        frames.map((f) => f.type),
        ['synStream', 'data', 'rstStream', 'ping', 'settings', 'windowUpdate'],
      );
      assert.deepEqual(frames[1], { type: 'data', streamId: 1, fin: true, data: Buffer.from('hello') });
    }
  });

  it('a frame over the size limit is a protocol error, before its bytes are buffered', () => {
    const header = Buffer.alloc(8);
    header.writeUInt32BE(1);
    header.writeUInt32BE(MAX_FRAME_PAYLOAD + 1, 4);
    assert.throws(() => new FrameReader().push(header), isSpdyProtocolError);
  });

  it('fuzz: any bytes give frames or a protocol error', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 16 }), (chunks) => {
        const reader = new FrameReader();
        try {
          for (const chunk of chunks) reader.push(Buffer.from(chunk));
        } catch (err) {
          assert.ok(isSpdyProtocolError(err), String(err));
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('fuzz: frames with a valid header and any payload give frames or a protocol error', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 255 }),
        fc.uint8Array({ maxLength: 40 }),
        (type, flags, payload) => {
          const header = Buffer.alloc(8);
          header.writeUInt32BE((0x8003 * 0x10000 + type) >>> 0);
          header.writeUInt32BE((flags * 0x1000000 + payload.length) >>> 0, 4);
          try {
            new FrameReader().push(Buffer.concat([header, Buffer.from(payload)]));
          } catch (err) {
            assert.ok(isSpdyProtocolError(err), String(err));
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('SPDY/3 header blocks', () => {
  it('blocks pass through one compression context each way, in order', async () => {
    const deflate = new HeaderCompressor();
    const inflate = new HeaderDecompressor();
    const blocks: SpdyHeaders[] = [
      { streamtype: ['error'] },
      { streamtype: ['stdout'], port: ['8080'] },
      { streamtype: ['stdout'], requestid: ['0', '1'] },
      {},
    ];
    const compressed = await Promise.all(blocks.map((b) => deflate.compress(b)));
    for (const [i, block] of compressed.entries())
      assert.deepEqual(await inflate.decompress(block), blocks[i]);
    deflate.close();
    inflate.close();
  });

  it('fuzz: any uncompressed block decodes or is a protocol error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          decodeHeaderBlock(Buffer.from(bytes));
        } catch (err) {
          assert.ok(isSpdyProtocolError(err), String(err));
        }
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^[a-z-]{1,10}$/), fc.array(fc.string(), { minLength: 1 })),
        (h) => {
          const values = Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v.join('\0').split('\0')]));
          assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock(values)), values);
        },
      ),
    );
  });

  it('fuzz: any compressed bytes inflate to headers or a protocol error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), async (bytes) => {
        const inflate = new HeaderDecompressor();
        try {
          await inflate.decompress(Buffer.from(bytes));
        } catch (err) {
          assert.ok(isSpdyProtocolError(err), String(err));
        } finally {
          inflate.close();
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('SPDY session', () => {
  it('answers a stream, carries data both ways, echoes pings, and ends with GOAWAY', async () => {
    const [server, client] = socketPair();
    const opened: SpdyStream[] = [];
    const session = new SpdySession(server, { idleTimeoutMs: 60_000, onStream: (s) => void opened.push(s) });
    const frames = frameCollector(client);
    const deflate = new HeaderCompressor();
    client.write(synStreamFrame(1, await deflate.compress({ streamtype: ['stdin'] }), false));
    client.write(dataFrame(1, Buffer.from('typed'), true));
    client.write(pingFrame(9));
    await until(() => opened.length === 1, 'the stream opened');
    const stream = opened[0] as SpdyStream;
    assert.equal(stream.header('streamtype'), 'stdin');
    const typed: Buffer[] = [];
    for await (const chunk of stream.incoming) typed.push(chunk as Buffer);
    assert.equal(Buffer.concat(typed).toString(), 'typed');
    await stream.write(Buffer.from('out'));
    await stream.end();
    await session.close();
    await until(() => frames.some((f) => f.type === 'goAway'), 'GOAWAY');
    assert.deepEqual(
      frames.map((f) => f.type),
      ['synReply', 'ping', 'data', 'data', 'goAway'],
    );
    deflate.close();
  });

  it('refuses a stream the handler rejects with a reset', async () => {
    const [server, client] = socketPair();
    new SpdySession(server, { idleTimeoutMs: 60_000, onStream: () => 'no port header' });
    const frames = frameCollector(client);
    const deflate = new HeaderCompressor();
    client.write(synStreamFrame(1, await deflate.compress({}), false));
    await until(() => frames.length > 0, 'an answer');
    assert.equal(frames[0]?.type, 'rstStream');
    deflate.close();
  });

  it('fuzz: any bytes from the client end in a closed connection or none, never an escaped error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 48 }), { maxLength: 6 }), async (chunks) => {
        const [server, client] = socketPair();
        client.on('data', () => undefined);
        const session = new SpdySession(server, {
          idleTimeoutMs: 60_000,
          onStream: (s) => void s.incoming.resume(),
        });
        for (const chunk of chunks) client.write(Buffer.from(chunk));
        client.end();
        await until(() => session.signal.aborted, 'the session ended', 2_000);
      }),
      { numRuns: 300 },
    );
  });
});

describe('exec and port-forward requests', () => {
  it('stream options follow the kubelet: a TTY drops stderr, no stream at all is refused', () => {
    assert.deepEqual(commandOptions({ input: ['1'], output: ['1'], error: ['1'], tty: ['1'] }), {
      stdin: true,
      stdout: true,
      stderr: false,
      tty: true,
    });
    assert.throws(() => commandOptions({ tty: ['1'] }), CommandOptionsError);
  });

  it('WebSocket ports are read as the kubelet reads them', () => {
    assert.deepEqual(websocketPorts({ port: ['80,8080', '443'] }), [80, 8080, 443]);
    const bads: Array<Record<string, string[]>> = [
      {},
      { port: [''] },
      { port: ['0'] },
      { port: ['65536'] },
      { port: ['http'] },
    ];
    for (const bad of bads) {
      assert.throws(() => websocketPorts(bad));
    }
  });

  it('terminal sizes are read from JSON objects one after another, malformed ones skipped', async () => {
    async function* source() {
      yield Buffer.from('{"Width":80,"Height":24}\n{"Wid');
      yield Buffer.from('th":100,"Height":30}\n{"Width":-1,"Height":3}\nnot json}');
    }
    const sizes = [];
    for await (const size of terminalSizes(source())) sizes.push(size);
    assert.deepEqual(sizes, [
      { width: 80, height: 24 },
      { width: 100, height: 30 },
    ]);
  });

  it('a non-zero exit is a v4 status with the exit code as its cause', () => {
    const status = JSON.parse(statusJson({ kind: 'exit', code: 3 }));
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '3' }]);
  });

  it('fuzz: the engine demuxer takes any bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 8 }), (chunks) => {
        const demuxer = new EngineDemuxer();
        for (const chunk of chunks) demuxer.push(Buffer.from(chunk));
      }),
    );
  });
});
