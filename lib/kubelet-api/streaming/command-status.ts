import type { TerminalSize } from '../../provider/container-streams.ts';

/**
 * How an exec or attach ended, and how the kubelet tells the client on the
 * error stream (remotecommand's ServeExec and ServeAttach): protocol v4
 * writes a metav1.Status as JSON (its NonZeroExitCode cause carries the exit
 * code, which kubectl exits with); older protocols write the failure's text,
 * and nothing on success.
 */
export type CommandOutcome =
  | { kind: 'success' }
  | { kind: 'exit'; code: number }
  | { kind: 'error'; message: string };

export function statusJson(outcome: CommandOutcome): string {
  switch (outcome.kind) {
    case 'success':
      return JSON.stringify({ metadata: {}, status: 'Success' });
    case 'exit':
      return JSON.stringify({
        metadata: {},
        status: 'Failure',
        message: `command terminated with non-zero exit code: command terminated with exit code ${outcome.code}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(outcome.code) }] },
      });
    case 'error':
      return JSON.stringify({
        metadata: {},
        status: 'Failure',
        message: `Internal error occurred: ${outcome.message}`,
        reason: 'InternalError',
        details: { causes: [{ message: outcome.message }] },
        code: 500,
      });
  }
}

/** The pre-v4 error text, or undefined on success (nothing is written then). */
export function statusText(outcome: CommandOutcome): string | undefined {
  switch (outcome.kind) {
    case 'success':
      return undefined;
    case 'exit':
      return `command terminated with non-zero exit code: command terminated with exit code ${outcome.code}`;
    case 'error':
      return `Internal error occurred: ${outcome.message}`;
  }
}

/** Terminal sizes from JSON objects (`{"Width":80,"Height":24}`), one after another; malformed ones are skipped. */
export async function* terminalSizes(source: AsyncIterable<Buffer | string>): AsyncGenerator<TerminalSize> {
  let pending = '';
  for await (const chunk of source) {
    pending += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    if (pending.length > 64 * 1024) pending = '';
    for (let end = pending.indexOf('}'); end >= 0; end = pending.indexOf('}')) {
      const text = pending.slice(0, end + 1);
      pending = pending.slice(end + 1);
      const size = parseSize(text.slice(text.indexOf('{')));
      if (size) yield size;
    }
  }
}

function parseSize(text: string): TerminalSize | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const width = 'Width' in value ? value.Width : undefined;
    const height = 'Height' in value ? value.Height : undefined;
    const ok = (n: unknown): n is number =>
      typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < 65536;
    return ok(width) && ok(height) ? { width, height } : undefined;
  } catch {
    return undefined;
  }
}
