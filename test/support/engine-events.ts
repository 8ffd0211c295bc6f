import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { LABELS } from '../../lib/provider/docker/names.ts';
import { waitFor } from './kube.ts';

/** A container event of the engine's stream (Docker Engine's and Podman's shape). */
export interface EngineEvent {
  Action?: string;
  status?: string;
  timeNano?: number;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

/**
 * Every container event of the engine since `since` (epoch seconds), from one
 * live stream opened at the first read: what tests count a pod's creates and
 * removals by, since the engine's list forgets what was removed.
 */
export class EngineEvents {
  readonly #seen: EngineEvent[] = [];
  #watching: Promise<void> | undefined;
  #stream: { destroy?: () => void } | undefined;
  #closed = false;
  #ended: Error | undefined;

  constructor(
    private readonly docker: Docker,
    private readonly since: number = Math.floor(Date.now() / 1000) - 1,
  ) {}

  /**
   * The events received so far, oldest first. Rejects once the engine has
   * ended the stream: what it would deliver on a new one may have lost the
   * oldest events (see #watch), and a count from it could pass for complete.
   */
  all(): Promise<readonly EngineEvent[]> {
    if (this.#ended) return Promise.reject(this.#ended);
    this.#watching ??= this.#watch().catch(() => {
      // The engine refused the stream for now: the next call asks again.
      this.#watching = undefined;
    });
    return this.#watching.then(() => {
      if (this.#ended) throw this.#ended;
      return this.#seen;
    });
  }

  /** The events of one pod uid, oldest first. */
  async of(uid: string): Promise<EngineEvent[]> {
    return (await this.all()).filter((e) => e.Actor?.Attributes?.[LABELS.uid] === uid);
  }

  /**
   * Waits until the stream has delivered every event of what happened before
   * this call: creates and removes a marker container of its own (from
   * `image`, which must be on the engine) and waits for its removal's event.
   */
  async catchUp(image: string, timeoutMs = 20_000): Promise<void> {
    const sentinel = `events-sentinel-${randomUUID()}`;
    const container = await this.docker.createContainer({
      name: sentinel,
      Image: image,
      Labels: { sentinel },
    });
    await container.remove({ force: true });
    await waitFor(
      async () =>
        this.#ended !== undefined ||
        (await this.all()).some(
          (e) => actionOf(e).action === 'remove' && e.Actor?.Attributes?.sentinel === sentinel,
        ),
      { timeoutMs, intervalMs: 100, what: 'the engine event stream to catch up' },
    );
    if (this.#ended) throw this.#ended;
  }

  close(): void {
    this.#closed = true;
    this.#stream?.destroy?.();
  }

  /**
   * Opens the stream from `since`. Podman ends such a stream (one read from
   * a past time) when it rotates its event log, and the rotated log has lost
   * the oldest events: the test instance's log is sized not to rotate in a
   * run (`events_logfile_max_size`, lib/local/podman-config.ts), and an end
   * is reported rather than papered over by a new stream.
   */
  async #watch(): Promise<void> {
    const stream = (await this.docker.getEvents({
      since: this.since,
      filters: { type: ['container'] },
    })) as NodeJS.ReadableStream & { destroy?: () => void };
    this.#stream = stream;
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        try {
          if (line.trim()) this.#seen.push(JSON.parse(line) as EngineEvent);
        } catch {
          // Not an event: the stream carries one JSON object per line.
        }
      }
    });
    const ended = (): void => {
      this.#ended ??= this.#closed
        ? undefined
        : new Error(
            'the engine ended its event stream (did Podman rotate its event log?): the events seen are incomplete',
          );
    };
    stream.on('end', ended);
    stream.on('close', ended);
    stream.on('error', ended);
  }
}

/**
 * What an event did (`create`, `start`, `remove`...), to the object of which
 * role. A removal is `remove` on Podman and `destroy` on Docker Engine: both
 * read `remove`.
 */
export function actionOf(e: EngineEvent): { action: string | undefined; role: string | undefined } {
  const action = e.Action ?? e.status;
  return { action: action === 'destroy' ? 'remove' : action, role: e.Actor?.Attributes?.[LABELS.role] };
}
