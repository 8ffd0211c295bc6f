/**
 * Helpers for providers that build a container log themselves (the mock, a
 * provider reading a log service): the kubelet's line format and its
 * `limitBytes` cut. A provider whose backend serves lines in that format (the
 * Docker Engine API) needs only the cut.
 */

const encoder = new TextEncoder();

/**
 * RFC 3339 in UTC with nine fractional digits, as the kubelet prefixes lines
 * (its `RFC3339NanoFixed`): `2026-03-01T10:00:00.400000000Z`.
 */
export function logTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
}

/** One log line as bytes: the text, a newline, and the timestamp prefix when asked for. */
export function logLine(epochMs: number, text: string, timestamps: boolean | undefined): Uint8Array {
  return encoder.encode(timestamps ? `${logTimestamp(epochMs)} ${text}\n` : `${text}\n`);
}

/** Ends `source` once `limit` bytes went through, cutting the last chunk; no limit passes it through. */
export async function* limitBytes(
  source: AsyncIterable<Uint8Array>,
  limit: number | undefined,
): AsyncGenerator<Uint8Array> {
  if (limit === undefined) {
    yield* source;
    return;
  }
  let left = limit;
  for await (const chunk of source) {
    if (left <= 0) return;
    const part = chunk.byteLength > left ? chunk.subarray(0, left) : chunk;
    left -= part.byteLength;
    yield part;
    if (left <= 0) return;
  }
}
