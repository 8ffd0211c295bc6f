import type Docker from 'dockerode';
import type { ProviderChange } from '../provider.ts';
import { LABELS, labelFilter } from './names.ts';

/**
 * The container events after which a pod's status may read differently:
 * a start (Running), an exit (`die`, with `oom` before it on Docker), a
 * removal (Docker's `destroy`, Podman's `remove`: a pod gone or lost), and a
 * health status. The rest (`create`, `init`, `attach`, `kill`, `stop`,
 * Podman's `cleanup`) are steps towards one of these, which follows.
 */
const STATUS_ACTIONS: ReadonlySet<string> = new Set(['start', 'die', 'oom', 'destroy', 'remove']);

/** A container event of the engine's `/events` stream, as Docker and Podman send it. */
export interface EngineEvent {
  Type?: string;
  Action?: string;
  /** The action, in older engines' (and Podman's duplicate) field. */
  status?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

/**
 * The change an engine event of `node` means to pod-status, if any. Checked
 * here even though the stream is opened with these filters: the engine's
 * label filter is the one both engines honour server-side (Podman 4.3's
 * `event=die` filter delivers nothing; its own name is `died`), and an
 * engine that ignored a filter must not wake rounds for others' containers.
 */
export function engineChange(event: EngineEvent, node: string): ProviderChange | undefined {
  if (event.Type !== undefined && event.Type !== 'container') return undefined;
  const action = event.Action ?? event.status ?? '';
  const attributes = event.Actor?.Attributes ?? {};
  if (attributes[LABELS.node] !== node) return undefined;
  if (!STATUS_ACTIONS.has(action) && !action.startsWith('health_status')) return undefined;
  const uid = attributes[LABELS.uid];
  return { reason: action, ...(uid ? { uid } : {}) };
}

/**
 * The changes of our containers on `node`, from the engine's event stream
 * (one long GET /events, filtered by type and by our node label), until
 * `signal` aborts. Throws when the stream cannot be opened, or when the
 * engine ends it (a restart of the engine).
 */
export async function* engineChanges(
  docker: Docker,
  node: string,
  signal: AbortSignal,
): AsyncGenerator<ProviderChange> {
  let stream: NodeJS.ReadableStream;
  try {
    stream = (await docker.getEvents({
      filters: { type: ['container'], label: labelFilter({ [LABELS.node]: node }) },
      abortSignal: signal,
    })) as NodeJS.ReadableStream;
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  }
  let rest = '';
  try {
    for await (const chunk of stream) {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const change = line.trim() ? engineChange(parseEvent(line), node) : undefined;
        if (change) yield change;
      }
    }
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  } finally {
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  }
  if (!signal.aborted) throw new Error('the engine ended its event stream');
}

function parseEvent(line: string): EngineEvent {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null ? (value as EngineEvent) : {};
  } catch {
    // Not an event: the stream carries one JSON object per line.
    return {};
  }
}
