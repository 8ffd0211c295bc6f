import type { ContainerLogOptions } from '../provider/provider.ts';

/** A `/containerLogs` query that the kubelet would refuse too; the message names the parameter. */
export class LogQueryError extends Error {
  override readonly name = 'LogQueryError';
}

export function isLogQueryError(err: unknown): err is LogQueryError {
  return err instanceof LogQueryError;
}

const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

function single(query: Readonly<Record<string, readonly string[]>>, name: string): string | undefined {
  const values = query[name];
  return values === undefined ? undefined : values[values.length - 1];
}

function flag(query: Readonly<Record<string, readonly string[]>>, name: string): boolean | undefined {
  const text = single(query, name);
  if (text === undefined || text === '') return undefined;
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  throw new LogQueryError(`${name}=${JSON.stringify(text)} is not a boolean`);
}

function whole(
  query: Readonly<Record<string, readonly string[]>>,
  name: string,
  min: number,
): number | undefined {
  const text = single(query, name);
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(value)) {
    throw new LogQueryError(`${name}=${JSON.stringify(text)} is not a whole number`);
  }
  if (value < min) throw new LogQueryError(`${name} must be at least ${min} (got ${value})`);
  return value;
}

/**
 * The kubelet's reading of a `/containerLogs` query (its v1 PodLogOptions and
 * ValidatePodLogOptions): `tailLines` >= 0 (also the older `tail`, where
 * `all` means no limit), `limitBytes` >= 1, `sinceSeconds` >= 1 or an RFC 3339
 * `sinceTime` but not both, and the flags `timestamps`, `previous` and
 * `follow`.
 * @throws LogQueryError naming the offending parameter.
 */
export function parseLogQuery(
  query: Readonly<Record<string, readonly string[]>>,
  now: number,
): ContainerLogOptions {
  const tail = single(query, 'tail');
  const effective = tail !== undefined && tail !== 'all' ? { ...query, tailLines: [tail] } : query;
  const tailLines = tail === 'all' ? undefined : whole(effective, 'tailLines', 0);
  const limitBytes = whole(query, 'limitBytes', 1);
  const sinceSeconds = whole(query, 'sinceSeconds', 1);
  const sinceTimeText = single(query, 'sinceTime');
  if (sinceSeconds !== undefined && sinceTimeText) {
    throw new LogQueryError('sinceSeconds and sinceTime cannot both be set');
  }
  let since: Date | undefined;
  if (sinceSeconds !== undefined) since = new Date(now - sinceSeconds * 1000);
  else if (sinceTimeText) {
    const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(sinceTimeText)
      ? Date.parse(sinceTimeText)
      : Number.NaN;
    if (Number.isNaN(at))
      throw new LogQueryError(`sinceTime=${JSON.stringify(sinceTimeText)} is not an RFC 3339 time`);
    since = new Date(at);
  }
  const timestamps = flag(query, 'timestamps');
  const previous = flag(query, 'previous');
  const follow = flag(query, 'follow');
  return {
    ...(tailLines !== undefined ? { tailLines } : {}),
    ...(since ? { since } : {}),
    ...(timestamps ? { timestamps } : {}),
    ...(limitBytes !== undefined ? { limitBytes } : {}),
    ...(previous ? { previous } : {}),
    ...(follow ? { follow } : {}),
  };
}
