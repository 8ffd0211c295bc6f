import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../clock.ts';
import { containerArgv } from '../container-command.ts';
import { limitBytes, logLine } from '../log-lines.ts';
import type { ContainerLogOptions } from '../provider.ts';
import { type MockPodState, mockPodStage } from './mock-pod-status.ts';
import { type MockLine, mockLines, mockProgram } from './mock-script.ts';

/**
 * The log of a mock container: a lifecycle line when it starts, what its
 * command and args print (mock-script.ts), and a lifecycle line when it
 * exits. Like a kubelet whose log files rotate, the mock keeps only the last
 * {@link MOCK_LOG_RETENTION_MS} of it.
 */

/** How far back the mock's logs reach. */
export const MOCK_LOG_RETENTION_MS = 60 * 60 * 1000;

export function mockStartedLine(container: string, image: string): string {
  return `mock: started container ${container} (image ${image})`;
}

export function mockExitedLine(container: string, exitCode: number): string {
  return `mock: container ${container} exited with code ${exitCode}`;
}

interface LogSource {
  /** The lines up to the container's end (or forever while it runs), in time order. */
  lines: Generator<MockLine>;
  /** Epoch ms when the container stops, or undefined while it runs without a planned end. */
  endsAt: number | undefined;
}

/**
 * The log stream of `container` of the mock pod `state` (the pod's spec gives
 * its command and args). Empty while the pod is still starting.
 */
export function mockContainerLog(args: {
  state: MockPodState;
  pod: V1Pod;
  container: string;
  options: ContainerLogOptions;
  clock: Clock;
  signal?: AbortSignal;
}): AsyncIterable<Uint8Array> {
  const { options } = args;
  const now = args.clock.now();
  const source = logSource(args.state, args.pod, args.container, now);
  return limitBytes(stream(source, now, options, args.clock, args.signal), options.limitBytes);
}

function logSource(state: MockPodState, pod: V1Pod, container: string, now: number): LogSource | undefined {
  const stage = mockPodStage(state, now);
  if (stage.stage === 'starting') return undefined;
  const { startedAt } = stage;
  const spec = pod.spec?.containers.find((c) => c.name === container);
  const image = state.containers.find((c) => c.name === container)?.image ?? spec?.image ?? '';
  // The pod here is the API server's, env unresolved: only literal values expand.
  const argv = spec ? containerArgv({ ...spec, env: spec.env?.filter((e) => e.value !== undefined) }) : {};
  const program = mockProgram(argv.command, argv.args);
  const endsAt = stage.stage === 'finished' ? stage.finishedAt : plannedEnd(state, startedAt);
  const from = Math.max(startedAt, now - MOCK_LOG_RETENTION_MS);
  function* lines(): Generator<MockLine> {
    if (startedAt >= from) yield { at: startedAt, text: mockStartedLine(container, image) };
    for (const line of mockLines(program, startedAt, from)) {
      if (endsAt !== undefined && line.at >= endsAt) break;
      yield line;
    }
    if (endsAt !== undefined) yield { at: endsAt, text: mockExitedLine(container, state.plan.exitCode) };
  }
  return { lines: lines(), endsAt };
}

function plannedEnd(state: MockPodState, startedAt: number): number | undefined {
  const finish = state.plan.finishAfterSeconds;
  return finish === undefined ? undefined : startedAt + finish * 1000;
}

async function* stream(
  source: LogSource | undefined,
  now: number,
  options: ContainerLogOptions,
  clock: Clock,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  if (!source) return;
  const written: MockLine[] = [];
  let next = source.lines.next();
  while (!next.done && next.value.at <= now) {
    written.push(next.value);
    next = source.lines.next();
  }
  const tail = options.tailLines === undefined ? written : written.slice(written.length - options.tailLines);
  const since = options.since?.getTime() ?? Number.NEGATIVE_INFINITY;
  for (const line of tail) if (line.at >= since) yield logLine(line.at, line.text, options.timestamps);
  if (!options.follow) return;
  try {
    while (!next.done) {
      await sleepUntil(clock, next.value.at, signal);
      yield logLine(next.value.at, next.value.text, options.timestamps);
      next = source.lines.next();
    }
    // Running on with nothing more to print: the follow stays open until the caller aborts it.
    if (source.endsAt === undefined && signal) await aborted(signal);
  } catch (err) {
    if (!signal?.aborted) throw err;
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

// setTimeout holds at most 2^31-1 ms; a longer wait (a loop sleeping for weeks) goes in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

async function sleepUntil(clock: Clock, at: number, signal: AbortSignal | undefined): Promise<void> {
  for (let left = at - clock.now(); left > 0; left = at - clock.now()) {
    await clock.sleep(Math.min(left, MAX_TIMER_MS), signal);
  }
}
