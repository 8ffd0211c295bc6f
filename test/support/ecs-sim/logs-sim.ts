import { SimError } from './sim-error.ts';

/**
 * CloudWatch Logs, as the awslogs driver fills it and GetLogEvents reads it:
 * a stream per container of a task; events in order; a page of at most
 * `limit` events (10,000 by default); reading from the head or, without
 * startFromHead, the last events; a nextForwardToken that returns the same
 * token when nothing newer exists. A stream nothing was written to does not
 * exist (ResourceNotFoundException).
 */
export class LogsSim {
  readonly streams = new Map<string, Array<{ timestamp: number; message: string }>>();
  readonly calls: Record<string, number> = {};

  write(group: string, stream: string, timestamp: number, message: string): void {
    const key = `${group}\n${stream}`;
    const events = this.streams.get(key) ?? [];
    events.push({ timestamp, message });
    this.streams.set(key, events);
  }

  handle(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    this.calls[operation] = (this.calls[operation] ?? 0) + 1;
    if (operation !== 'GetLogEvents')
      throw new SimError('UnknownOperationException', `the simulation does not implement Logs ${operation}`);
    const events = this.streams.get(`${body.logGroupName}\n${body.logStreamName}`);
    if (!events) throw new SimError('ResourceNotFoundException', 'The specified log stream does not exist.');
    const limit = typeof body.limit === 'number' ? Math.min(body.limit, 10_000) : 10_000;
    const token = typeof body.nextToken === 'string' ? body.nextToken : undefined;
    let from: number;
    if (token) from = Number(token.slice(2));
    else if (body.startFromHead === true) {
      const start = typeof body.startTime === 'number' ? body.startTime : 0;
      from = events.findIndex((e) => e.timestamp >= start);
      if (from < 0) from = events.length;
    } else from = Math.max(0, events.length - limit);
    const page = events.slice(from, from + limit);
    const next = from + page.length;
    return {
      events: page.map((e) => ({ timestamp: e.timestamp, message: e.message, ingestionTime: e.timestamp })),
      nextForwardToken: `f/${String(next).padStart(8, '0')}`,
      nextBackwardToken: `b/${String(from).padStart(8, '0')}`,
    };
  }
}
