/**
 * The container log as the Docker Engine API serves it with `timestamps=1`,
 * turned back into the container's lines.
 *
 * Without a TTY the engine multiplexes stdout and stderr in frames (an
 * 8-byte header: stream, 3 zero bytes, big-endian length); each frame is one
 * log entry, prefixed with the engine's timestamp and a space. An entry
 * without a trailing newline is part of a line (the container wrote no
 * newline yet, or Docker split a line over 16 KiB): the line goes on in the
 * next entry of the same stream, even when entries of the other stream come
 * in between. With a TTY there is one unframed stream whose lines each start
 * with their timestamp.
 *
 * Engines differ in timestamp precision: Docker writes nanoseconds, Podman
 * whole seconds (in its own time zone). A stamp therefore stands for an
 * interval, and a line is only known to be older than a point in time when
 * its whole interval is.
 */

/** An engine timestamp, read. */
export interface EngineStamp {
  /** RFC 3339 in UTC with nine fractional digits, as the kubelet writes them. */
  text: string;
  /** The earliest instant (epoch ms) the stamp stands for. */
  fromMs: number;
  /** The first instant (epoch ms) after the interval it stands for. */
  untilMs: number;
}

/** One whole line of the container's output, without its newline. */
export interface EngineLogLine {
  /** 1 stdout, 2 stderr (0 with a TTY). */
  stream: number;
  /** When the engine logged the entry that ended the line. */
  stamp?: EngineStamp;
  text: Buffer;
  /** The log ended inside this line: the container wrote no newline after it. */
  partial?: boolean;
}

const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;
const NEWLINE = 0x0a;
const SPACE = 0x20;
/** Longer than any RFC 3339 stamp with nanoseconds and an offset. */
const MAX_STAMP_BYTES = 40;

/** Reads an engine timestamp; undefined when `text` is not one. */
export function parseEngineStamp(text: string): EngineStamp | undefined {
  const m = STAMP.exec(text);
  if (!m?.[1] || !m[3]) return undefined;
  const secondMs = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(secondMs)) return undefined;
  const digits = m[2] ?? '';
  const nanos = digits.padEnd(9, '0');
  const fromMs = secondMs + Math.floor(Number(nanos) / 1e6);
  // d fractional digits pin the instant to 10^-d s; at most to the millisecond here.
  const stepMs = digits.length >= 3 ? 1 : 10 ** (3 - digits.length);
  const utc = new Date(secondMs).toISOString().slice(0, 19);
  return { text: `${utc}.${nanos}Z`, fromMs, untilMs: fromMs + stepMs };
}

/** Splits `entry` into its stamp and the bytes after the stamp's space; no stamp leaves it whole. */
function splitStamp(entry: Buffer): { stamp?: EngineStamp; body: Buffer } {
  const space = entry.subarray(0, MAX_STAMP_BYTES).indexOf(SPACE);
  const stamp = space > 0 ? parseEngineStamp(entry.subarray(0, space).toString('latin1')) : undefined;
  return stamp ? { stamp, body: entry.subarray(space + 1) } : { body: entry };
}

interface Entry {
  stream: number;
  bytes: Buffer;
}

/** The engine's log entries: one per frame, or one per line with a TTY. */
async function* engineEntries(source: AsyncIterable<Buffer>, tty: boolean): AsyncGenerator<Entry> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of source) {
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    if (tty) {
      let end = pending.indexOf(NEWLINE);
      while (end >= 0) {
        yield { stream: 0, bytes: pending.subarray(0, end + 1) };
        pending = pending.subarray(end + 1);
        end = pending.indexOf(NEWLINE);
      }
      continue;
    }
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      yield { stream: pending[0] ?? 1, bytes: pending.subarray(8, 8 + size) };
      pending = pending.subarray(8 + size);
    }
  }
  if (tty && pending.length > 0) yield { stream: 0, bytes: pending };
}

/**
 * The container's lines, in the order they were completed. A line is
 * stamped with the entry that ended it, so stamps never go backwards. A
 * line still unfinished when the log ends is yielded as it is.
 */
export async function* engineLogLines(
  source: AsyncIterable<Buffer>,
  tty: boolean,
): AsyncGenerator<EngineLogLine> {
  const unfinished = new Map<number, { parts: Buffer[]; stamp?: EngineStamp }>();
  for await (const entry of engineEntries(source, tty)) {
    const { stamp, body } = splitStamp(entry.bytes);
    const open = unfinished.get(entry.stream) ?? { parts: [] };
    if (stamp) open.stamp = stamp;
    let rest = body;
    let end = rest.indexOf(NEWLINE);
    while (end >= 0) {
      const text = Buffer.concat([...open.parts, rest.subarray(0, end)]);
      yield { stream: entry.stream, ...(open.stamp ? { stamp: open.stamp } : {}), text };
      open.parts = [];
      rest = rest.subarray(end + 1);
      end = rest.indexOf(NEWLINE);
    }
    if (rest.length > 0) open.parts.push(rest);
    if (open.parts.length > 0) unfinished.set(entry.stream, open);
    else unfinished.delete(entry.stream);
  }
  for (const [stream, open] of unfinished) {
    yield {
      stream,
      ...(open.stamp ? { stamp: open.stamp } : {}),
      text: Buffer.concat(open.parts),
      partial: true,
    };
  }
}

/**
 * A line as the kubelet serves it (with its timestamp when asked for, and a
 * newline), or undefined when it was certainly written before `sinceMs`.
 */
export function renderLogLine(
  line: EngineLogLine,
  options: { timestamps?: boolean; sinceMs?: number },
): Buffer | undefined {
  if (options.sinceMs !== undefined && line.stamp && line.stamp.untilMs <= options.sinceMs) return undefined;
  const prefix = options.timestamps && line.stamp ? `${line.stamp.text} ` : '';
  return Buffer.concat([Buffer.from(prefix), line.text, Buffer.from('\n')]);
}

/**
 * `since` as the engine's `since` parameter: seconds and nanoseconds since
 * the epoch (`1700000000.250000000`), which Docker and Podman both read to
 * the nanosecond; whole seconds would let in up to a second of older lines.
 */
export function engineSince(since: Date): string {
  const ms = since.getTime();
  const seconds = Math.floor(ms / 1000);
  return `${seconds}.${String((ms - seconds * 1000) * 1e6).padStart(9, '0')}`;
}
