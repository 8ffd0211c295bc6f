import { request } from 'node:http';

/**
 * The few Docker Engine API calls the prober makes, over the engine's unix
 * socket mounted into its container: both Docker Engine and Podman serve
 * them unversioned. Only node: modules, so that the prober's script stays
 * small and runs on any recent Node image.
 */

export interface EngineContainerSummary {
  Id: string;
  State: string;
  Labels?: Record<string, string>;
}

export interface EngineContainerInfo {
  Id: string;
  State: { Running?: boolean; StartedAt?: string };
  Config?: { Env?: string[] | null; Labels?: Record<string, string> };
  NetworkSettings?: { Networks?: Record<string, { IPAddress?: string }> };
}

export class EngineRequestError extends Error {
  override readonly name = 'EngineRequestError';
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ExecOutcome {
  /** Undefined when the command did not end within the timeout. */
  exitCode?: number;
  /** Its stdout and stderr as they came, at most `limit` bytes. */
  output: string;
}

export class AgentEngine {
  constructor(private readonly socketPath: string) {}

  listContainers(labels: Record<string, string>): Promise<EngineContainerSummary[]> {
    const filters = JSON.stringify({ label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) });
    return this.json('GET', `/containers/json?all=true&filters=${encodeURIComponent(filters)}`);
  }

  inspect(id: string): Promise<EngineContainerInfo> {
    return this.json('GET', `/containers/${encodeURIComponent(id)}/json`);
  }

  /** Stops a container: SIGTERM, then SIGKILL after `graceSeconds` (the engine keeps the time). */
  async stop(id: string, graceSeconds: number): Promise<void> {
    await this.call('POST', `/containers/${encodeURIComponent(id)}/stop?t=${Math.max(0, graceSeconds)}`);
  }

  async kill(id: string, signal: string): Promise<void> {
    await this.call('POST', `/containers/${encodeURIComponent(id)}/kill?signal=${signal}`);
  }

  /**
   * Runs `command` in the container (the engine's exec, in the container's
   * namespaces, as its user, with its env), its output capped at `limit`
   * bytes. Without an exit within `timeoutMs` it reports no exit code; the
   * process is left to end by itself, as the kubelet leaves a timed-out exec.
   */
  async exec(id: string, command: readonly string[], timeoutMs: number, limit: number): Promise<ExecOutcome> {
    const created = await this.json<{ Id: string }>('POST', `/containers/${encodeURIComponent(id)}/exec`, {
      Cmd: command,
      AttachStdout: true,
      AttachStderr: true,
    });
    const output = await this.execStream(created.Id, timeoutMs, limit);
    if (output.timedOut) return { output: output.text };
    const info = await this.json<{ ExitCode?: number | null; Running?: boolean }>(
      'GET',
      `/exec/${created.Id}/json`,
    );
    return { exitCode: info.ExitCode ?? (info.Running ? undefined : 0), output: output.text };
  }

  /** The engine's event stream of containers carrying `labels`; `onEvent` gets each; resolves when it ends. */
  events(labels: Record<string, string>, onEvent: (event: unknown) => void): Promise<void> {
    const filters = JSON.stringify({
      type: ['container'],
      label: Object.entries(labels).map(([k, v]) => `${k}=${v}`),
    });
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          method: 'GET',
          path: `/events?filters=${encodeURIComponent(filters)}`,
        },
        (res) => {
          if ((res.statusCode ?? 500) >= 300) {
            res.resume();
            reject(new EngineRequestError(res.statusCode ?? 500, 'events stream refused'));
            return;
          }
          let pending = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            pending += chunk;
            for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
              const line = pending.slice(0, nl).trim();
              pending = pending.slice(nl + 1);
              if (!line) continue;
              try {
                onEvent(JSON.parse(line));
              } catch {
                // A line that is not JSON says nothing we act on.
              }
            }
          });
          res.on('end', () => resolve());
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  private execStream(
    execId: string,
    timeoutMs: number,
    limit: number,
  ): Promise<{ text: string; timedOut: boolean }> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let settled = false;
      const finish = (timedOut: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ text: demultiplex(Buffer.concat(chunks), limit), timedOut });
      };
      const body = JSON.stringify({ Detach: false, Tty: false });
      const req = request(
        {
          socketPath: this.socketPath,
          method: 'POST',
          path: `/exec/${execId}/start`,
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        },
        (res) => {
          if ((res.statusCode ?? 500) >= 300) {
            res.resume();
            settled = true;
            clearTimeout(timer);
            reject(new EngineRequestError(res.statusCode ?? 500, `exec start refused (${res.statusCode})`));
            return;
          }
          res.on('data', (chunk: Buffer) => {
            // Kept up to twice the limit: frame headers take room too.
            if (chunks.reduce((n, c) => n + c.length, 0) < 2 * limit + 64) chunks.push(chunk);
          });
          res.on('end', () => finish(false));
          res.on('error', () => finish(false));
        },
      );
      const timer = setTimeout(() => {
        finish(true);
        req.destroy();
      }, timeoutMs);
      req.on('error', (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      });
      req.end(body);
    });
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const text = await this.call(method, path, body);
    return JSON.parse(text) as T;
  }

  private call(method: string, path: string, body?: unknown): Promise<string> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          method,
          path,
          headers: payload
            ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }
            : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 500;
            if (status >= 300 && status !== 304) reject(new EngineRequestError(status, text.slice(0, 300)));
            else resolve(text);
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error(`engine request ${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
}

/**
 * The output of a non-TTY exec: frames of an 8-byte header (stream, 3
 * zero bytes, a big-endian length) and their payload, stdout and stderr
 * interleaved as written, cut at `limit` bytes.
 */
export function demultiplex(raw: Buffer, limit: number): string {
  const parts: Buffer[] = [];
  let size = 0;
  let offset = 0;
  while (offset + 8 <= raw.length && size < limit) {
    const length = raw.readUInt32BE(offset + 4);
    const payload = raw.subarray(offset + 8, Math.min(offset + 8 + length, raw.length));
    parts.push(payload.subarray(0, limit - size));
    size += Math.min(payload.length, limit - size);
    offset += 8 + length;
  }
  return Buffer.concat(parts).toString('utf8');
}
