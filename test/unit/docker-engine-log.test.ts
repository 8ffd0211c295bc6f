import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type EngineLogLine,
  engineLogLines,
  engineSince,
  parseEngineStamp,
  renderLogLine,
} from '../../lib/provider/docker/engine-log.ts';

/** One multiplexed frame as the engine sends it: stream byte, three zero bytes, big-endian length, payload. */
function frame(stream: number, payload: string | Buffer): Buffer {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

async function* chunks(...parts: Buffer[]): AsyncGenerator<Buffer> {
  yield* parts;
}

async function collect(source: AsyncIterable<EngineLogLine>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of source) out.push(`${line.stream}|${line.stamp?.text ?? '-'}|${line.text}`);
  return out;
}

const S = (second: number) => `2026-11-23T03:34:${String(second).padStart(2, '0')}Z`;
const N = (second: number) => `2026-11-23T03:34:${String(second).padStart(2, '0')}.000000000Z`;

describe('docker engine log: entries back into lines', () => {
  it('keeps a line written in parts on one stream whole while the other stream writes in between', async () => {
    // What Podman served for: echo late1; echo late2 >&2; printf nonl; sleep 2; echo end
    const lines = await collect(
      engineLogLines(
        chunks(
          frame(1, `${S(5)} late1\n`),
          frame(2, `${S(5)} late2\n`),
          frame(1, `${S(5)} nonl`),
          frame(2, `${S(6)} between\n`),
          frame(1, `${S(7)} end\n`),
        ),
        false,
      ),
    );
    assert.deepEqual(lines, [`1|${N(5)}|late1`, `2|${N(5)}|late2`, `2|${N(6)}|between`, `1|${N(7)}|nonlend`]);
  });

  it('reads frames split anywhere across chunks, and a character split across entries', async () => {
    const euro = Buffer.from('\u20ac\n');
    const all = Buffer.concat([
      frame(1, `${S(1)} h\u00e9llo\n`),
      frame(2, Buffer.concat([Buffer.from(`${S(2)} w`), euro.subarray(0, 1)])),
      frame(2, Buffer.concat([Buffer.from(`${S(3)} `), euro.subarray(1)])),
    ]);
    const pieces = [all.subarray(0, 3), all.subarray(3, 20), all.subarray(20, 45), all.subarray(45)];
    assert.deepEqual(await collect(engineLogLines(chunks(...pieces), false)), [
      `1|${N(1)}|h\u00e9llo`,
      `2|${N(3)}|w\u20ac`,
    ]);
  });

  it('yields a line the container has not finished when the log ends', async () => {
    assert.deepEqual(await collect(engineLogLines(chunks(frame(1, `${S(4)} no newline`)), false)), [
      `1|${N(4)}|no newline`,
    ]);
  });

  it('reads the unframed stream of a TTY line by line, each with its own stamp', async () => {
    const text = Buffer.from(`${S(1)} one\r\n${S(2)} two\n${S(3)} thr`);
    assert.deepEqual(await collect(engineLogLines(chunks(text.subarray(0, 30), text.subarray(30)), true)), [
      `0|${N(1)}|one\r`,
      `0|${N(2)}|two`,
      `0|${N(3)}|thr`,
    ]);
  });

  it('leaves an entry without a stamp as it is', async () => {
    assert.deepEqual(await collect(engineLogLines(chunks(frame(1, 'plain words\n')), false)), [
      '1|-|plain words',
    ]);
  });
});

describe('docker engine log: timestamps', () => {
  it('writes nine fractional digits in UTC, as the kubelet does, whatever the engine gave', () => {
    assert.equal(parseEngineStamp('2026-11-23T01:34:41Z')?.text, '2026-11-23T01:34:41.000000000Z');
    assert.equal(parseEngineStamp('2026-11-23T01:34:41.123456789Z')?.text, '2026-11-23T01:34:41.123456789Z');
    // Podman stamps in its own time zone.
    assert.equal(parseEngineStamp('2026-11-23T02:34:41.5+01:00')?.text, '2026-11-23T01:34:41.500000000Z');
    assert.equal(parseEngineStamp('not-a-time'), undefined);
    assert.equal(parseEngineStamp('2026-11-23T01:34:41'), undefined);
  });

  it('stands for the interval its precision leaves open', () => {
    const whole = parseEngineStamp('2026-11-23T01:34:41Z');
    assert.equal(whole?.fromMs, Date.parse('2026-11-23T01:34:41.000Z'));
    assert.equal(whole?.untilMs, Date.parse('2026-11-23T01:34:42.000Z'));
    const tenths = parseEngineStamp('2026-11-23T01:34:41.3Z');
    assert.equal(tenths?.fromMs, Date.parse('2026-11-23T01:34:41.300Z'));
    assert.equal(tenths?.untilMs, Date.parse('2026-11-23T01:34:41.400Z'));
    const nanos = parseEngineStamp('2026-11-23T01:34:41.123456789Z');
    assert.equal(nanos?.fromMs, Date.parse('2026-11-23T01:34:41.123Z'));
    assert.equal(nanos?.untilMs, Date.parse('2026-11-23T01:34:41.124Z'));
  });
});

describe('docker engine log: since and timestamps on the way out', () => {
  const line = (stamp: string, text: string): EngineLogLine => {
    const parsed = parseEngineStamp(stamp);
    return { stream: 1, ...(parsed ? { stamp: parsed } : {}), text: Buffer.from(text) };
  };
  const out = (rendered: Buffer | undefined) => rendered?.toString();

  it('keeps a whole-second line whose second reaches past the since point (it may be later)', () => {
    const since = Date.parse('2026-11-23T03:34:05.400Z');
    assert.equal(
      out(renderLogLine(line(S(5), 'in the same second'), { sinceMs: since })),
      'in the same second\n',
    );
    assert.equal(out(renderLogLine(line(S(4), 'a second before'), { sinceMs: since })), undefined);
    assert.equal(out(renderLogLine(line(S(6), 'after'), { sinceMs: since })), 'after\n');
  });

  it('drops a precise line written before the since point, keeps one written at it', () => {
    const since = Date.parse('2026-11-23T03:34:05.400Z');
    const before = line('2026-11-23T03:34:05.399999999Z', 'before');
    const at = line('2026-11-23T03:34:05.400000001Z', 'at');
    assert.equal(out(renderLogLine(before, { sinceMs: since })), undefined);
    assert.equal(
      out(renderLogLine(at, { sinceMs: since, timestamps: true })),
      `2026-11-23T03:34:05.400000001Z at\n`,
    );
  });

  it('prefixes the stamp only when asked, and never invents one', () => {
    assert.equal(out(renderLogLine(line(S(1), 'x'), { timestamps: true })), `${N(1)} x\n`);
    assert.equal(out(renderLogLine(line(S(1), 'x'), {})), 'x\n');
    assert.equal(out(renderLogLine(line('none', 'x'), { timestamps: true, sinceMs: 0 })), 'x\n');
  });

  it('gives the engine the since point to the nanosecond, not the whole second', () => {
    assert.equal(engineSince(new Date('2026-11-23T03:34:05.400Z')), '1795404845.400000000');
    assert.equal(engineSince(new Date('2026-11-23T03:34:05.007Z')), '1795404845.007000000');
    assert.equal(engineSince(new Date('2026-11-23T03:34:05Z')), '1795404845.000000000');
  });
});
