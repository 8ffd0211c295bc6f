/**
 * One readable line per JSON log line, for `npm start`'s terminal: the
 * functions keep logging exactly what CloudWatch receives, and this only
 * changes how it is shown: scripts/start.ts pipes the functions' stdout
 * through it, so no pino transport (a worker thread) runs. pino-pretty
 * would do more; this needs no package.
 */

const SHOWN_APART = new Set(['time', 'level', 'function_name', 'function_request_id', 'node', 'pod', 'msg']);

/** The same on every line of a local run, or noise in a terminal: left to the JSON. */
const LEFT_OUT = new Set(['service', 'function_arn', 'function_memory_size', 'xray_trace_id', 'cold_start']);

function value(v: unknown): string {
  if (typeof v === 'string') return /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  if (v !== null && typeof v === 'object' && 'message' in v && typeof v.message === 'string') {
    const type = 'type' in v && typeof v.type === 'string' ? `${v.type}: ` : '';
    return JSON.stringify(`${type}${v.message.split('\n')[0]}`);
  }
  return JSON.stringify(v);
}

/**
 * `12:00:01.234 INFO  heartbeat 1a2b3c4d node=vk-1 pod=ns/web message key=value ...`;
 * a line that is not a JSON object comes back unchanged.
 */
export function formatLogLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return line;
    entry = parsed as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : '';
  const level = String(entry.level ?? '')
    .toUpperCase()
    .padEnd(5);
  const head = [
    time,
    level,
    typeof entry.function_name === 'string' ? entry.function_name : '',
    typeof entry.function_request_id === 'string' ? entry.function_request_id.slice(0, 8) : '',
    entry.node !== undefined ? `node=${value(entry.node)}` : '',
    entry.pod !== undefined ? `pod=${value(entry.pod)}` : '',
    typeof entry.msg === 'string' ? entry.msg : '',
  ];
  const rest = Object.entries(entry)
    .filter(([k]) => !SHOWN_APART.has(k) && !LEFT_OUT.has(k))
    .map(([k, v]) => `${k}=${value(v)}`);
  return [...head, ...rest].filter((part) => part !== '').join(' ');
}
