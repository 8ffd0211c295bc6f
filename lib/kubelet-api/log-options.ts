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
  throw new LogQueryError(`${name}=${JSON.stringify(clip(text))} is not a boolean`);
}

/**
 * The largest value a numeric log parameter takes (2^31 - 1): far above any
 * real log (68 years of seconds, 2 GiB, two billion lines), and a bound that
 * every backend (the Docker Engine, CloudWatch Logs) and Date arithmetic
 * take without overflow.
 */
export const MAX_LOG_PARAMETER = 2_147_483_647;

function whole(
  query: Readonly<Record<string, readonly string[]>>,
  name: string,
  min: number,
): number | undefined {
  const text = single(query, name);
  if (text === undefined || text === '') return undefined;
  if (!/^-?\d+$/.test(text)) {
    throw new LogQueryError(`${name}=${JSON.stringify(clip(text))} is not a whole number`);
  }
  const value = Number(text);
  if (value < min) throw new LogQueryError(`${name} must be at least ${min} (got ${clip(text)})`);
  if (value > MAX_LOG_PARAMETER) {
    throw new LogQueryError(`${name} must be at most ${MAX_LOG_PARAMETER} (got ${clip(text)})`);
  }
  return value;
}

/** A value as quoted back in an error: at most 64 characters of it. */
function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 time as Go's time.Parse(time.RFC3339) reads a `sinceTime`
 * (metav1.Time's query form): every field in its range (no February 30th,
 * no hour 24, no leap second), an offset of at most 23:59; epoch ms, or
 * undefined when it is not one.
 */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !leap(year) ? 1 : 0);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[8] !== 'Z') {
    const hours = Number(m[10]);
    const minutes = Number(m[11]);
    if (hours > 23 || minutes > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  const at = new Date(0);
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(hour, minute, second, Math.floor(Number(`0${m[7] ?? ''}`) * 1000));
  return at.getTime() - offsetMinutes * 60_000;
}

function leap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * The kubelet's reading of a `/containerLogs` query (its v1 PodLogOptions and
 * ValidatePodLogOptions): `tailLines` >= 0 (also the older `tail`, where
 * `all` means no limit), `limitBytes` >= 1, `sinceSeconds` >= 1 or an RFC 3339
 * `sinceTime` but not both, and the flags `timestamps`, `previous` and
 * `follow`. Every number is at most {@link MAX_LOG_PARAMETER}, and a `since`
 * before 1970 reads the whole log (from the Unix epoch), so what reaches a
 * provider is always a valid time.
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
  if (sinceSeconds !== undefined) since = new Date(Math.max(0, now - sinceSeconds * 1000));
  else if (sinceTimeText) {
    const at = parseRfc3339(sinceTimeText);
    if (at === undefined)
      throw new LogQueryError(`sinceTime=${JSON.stringify(clip(sinceTimeText))} is not an RFC 3339 time`);
    since = new Date(Math.max(0, at));
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
