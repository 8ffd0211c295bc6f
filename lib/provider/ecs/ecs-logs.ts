import {
  type CloudWatchLogsClient,
  GetLogEventsCommand,
  type OutputLogEvent,
  ResourceNotFoundException,
} from '@aws-sdk/client-cloudwatch-logs';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import { type ContainerLogOptions, ProviderNotFoundError } from '../provider.ts';
import { logStreamName } from './container-definition.ts';
import type { EcsPodStore } from './ecs-pod-store.ts';
import { isStopped } from './task-snapshot.ts';

/**
 * Container logs from CloudWatch Logs: the awslogs driver writes each line a
 * container prints as one event of the stream `<namespace>/<container>/<task
 * id>` (container-definition.ts), so a container's log is the stream of its
 * pod's current task, or of the previous task with `previous`. Read with
 * GetLogEvents (up to 10,000 events or 1 MB a page): the last `tailLines`
 * events from the end, else everything from `since` (or the start), then
 * new events every `followPollMs` while following.
 */

export interface EcsLogsOptions {
  logs: CloudWatchLogsClient;
  store: EcsPodStore;
  clock: Clock;
  logGroup: string;
  /** How often a follow asks for new events. Default 1 s. */
  followPollMs?: number;
}

export class EcsLogs {
  constructor(private readonly options: EcsLogsOptions) {}

  async containerLogs(
    pod: V1Pod,
    container: string,
    options: ContainerLogOptions,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    const record = await this.options.store.get(namespace, name);
    const missing = (what: string) =>
      new ProviderNotFoundError(`ECS provider has no ${what} of ${namespace}/${name}`);
    if (!record || record.uid !== pod.metadata?.uid) throw missing('pod');
    if (![...record.initContainers, ...record.containers].some((c) => c.name === container))
      throw missing(`container ${container}`);
    const task = options.previous ? record.previous : record.current;
    if (!task?.arn) throw missing(options.previous ? `previous task` : 'task yet');
    const stream = logStreamName(namespace, container, task.arn);
    const stillRuns = async () => {
      const fresh = await this.options.store.get(namespace, name);
      const same = fresh?.uid === record.uid && fresh.current.arn === task.arn;
      return same && !isStopped(fresh.current.snapshot) && fresh.goneAt === undefined;
    };
    return this.read(stream, options, options.follow && !options.previous ? stillRuns : undefined, signal);
  }

  private async *read(
    stream: string,
    options: ContainerLogOptions,
    stillRuns: (() => Promise<boolean>) | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<Uint8Array> {
    let budget = options.limitBytes ?? Number.POSITIVE_INFINITY;
    const since = options.since?.getTime();
    const emit = (events: OutputLogEvent[]): Uint8Array | undefined => {
      const text = events
        .filter((e) => since === undefined || (e.timestamp ?? 0) >= since)
        .map(
          (e) =>
            `${options.timestamps ? `${rfc3339Nano(e.timestamp ?? 0)} ` : ''}${(e.message ?? '').replace(/\n$/, '')}\n`,
        )
        .join('');
      if (!text) return undefined;
      const bytes = Buffer.from(text, 'utf8');
      const out = bytes.subarray(0, Math.min(bytes.length, budget));
      budget -= out.length;
      return out;
    };
    let token: string | undefined;
    let first = true;
    for (;;) {
      signal?.throwIfAborted();
      const page = await this.page(stream, options, first, token, signal);
      first = false;
      const chunk = emit(page.events);
      if (chunk && chunk.length > 0) yield chunk;
      if (budget <= 0) return;
      const moved = page.next !== undefined && page.next !== token;
      token = page.next ?? token;
      if (moved && page.events.length > 0) continue;
      if (!stillRuns || !(await stillRuns())) return;
      await this.options.clock.sleep(this.options.followPollMs ?? 1_000, signal);
    }
  }

  private async page(
    stream: string,
    options: ContainerLogOptions,
    first: boolean,
    token: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ events: OutputLogEvent[]; next?: string }> {
    const tail = first && options.tailLines !== undefined;
    if (tail && options.tailLines === 0) return { events: [] };
    try {
      const out = await this.options.logs.send(
        new GetLogEventsCommand({
          logGroupName: this.options.logGroup,
          logStreamName: stream,
          ...(token ? { nextToken: token } : { startFromHead: !tail }),
          ...(tail ? { limit: Math.min(options.tailLines ?? 10_000, 10_000) } : {}),
          ...(first && !tail && options.since ? { startTime: options.since.getTime() } : {}),
        }),
        signal ? { abortSignal: signal } : {},
      );
      return { events: out.events ?? [], ...(out.nextForwardToken ? { next: out.nextForwardToken } : {}) };
    } catch (err) {
      // The stream exists once the container printed its first line.
      if (err instanceof ResourceNotFoundException) return { events: [] };
      throw err;
    }
  }
}

/** An epoch-ms time as RFC 3339 with nine fractional digits, UTC (the kubelet's timestamps). */
export function rfc3339Nano(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
}
