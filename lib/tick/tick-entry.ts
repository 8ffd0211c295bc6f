import type { Dependencies } from '../app/dependencies.ts';
import { runWithDeadline } from '../deadline.ts';
import type { EventPublisher } from '../events/publisher.ts';
import type { Invocation } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import { errorMessage } from '../util/error-message.ts';
import { type TickGate, tickGate } from './tick-gate.ts';
import { type PartContext, type PartWork, TickParts } from './tick-parts.ts';
import type { TickQueue } from './tick-queue.ts';
import { slotAt, successorSlot, tickFence } from './tick-slot.ts';
import type { TickTrigger } from './tick-trigger.ts';

/** Margin between the end of a tick's work and its invocation's deadline, for the successor and the logs. */
export const TICK_DEADLINE_MARGIN_MS = 2_000;

/** The tick's message could not be sent on: the invocation fails, so the queue delivers its message again. */
export class TickChainError extends Error {
  override readonly name = 'TickChainError';
}

/** What one tick invocation did, for logs and tests. */
export interface TickRunResult {
  trigger: TickTrigger['kind'];
  /** The slot of the message that started the tick (chain), and of the one it sent on. */
  slot?: number;
  successor?: number;
  /** Keeper: whether the queue held the chain, or the chain was started again. */
  chain?: 'alive' | 'restarted';
  gate?: TickGate;
  /** Each part's result, or the error that ended it. */
  parts: Record<string, unknown>;
  /** How long each part took (ms). */
  partMs: Record<string, number>;
}

export interface TickOptions {
  queue: TickQueue;
  /** Where pod-watch publishes pod events. */
  publisher: EventPublisher;
}

/** The parts of a cold start, kept across the invocations of its warm sandbox. */
const sandboxes = new WeakMap<Dependencies, TickParts>();

/**
 * The tick function's one entry point. A chain tick first sends the next
 * message (so the chain goes on even if this invocation dies: the queue
 * holds it back one period, and then behind this message until this one is
 * deleted or delivered again), then starts the heartbeat, which renews the
 * leases at once, and asks the release gate (cut off after a few seconds)
 * meanwhile; then runs its parts until its work time is up. With the gate
 * open: the rest of the heartbeat, pod-watch, pod-status and the reconciler.
 * Refused, or the state table unreachable: the lease renewals only, and the
 * StateStoreUnavailable condition when unreachable (heartbeat-tick.ts).
 *
 * The keeper (the once-a-minute schedule) restarts a chain the queue no
 * longer holds and then renews the leases at once; while the chain lives it
 * does nothing. A keeper that restarts a chain still alive (SQS counts are
 * approximate) only forks it for one period (tick-slot.ts).
 */
export async function tick(
  deps: Dependencies,
  invocation: Invocation,
  trigger: TickTrigger,
  options: TickOptions,
): Promise<TickRunResult> {
  const { clock, config } = deps;
  const log = deps.log.child({ requestId: invocation.requestId });
  const periodMs = config.node.leaseRenewIntervalMs;
  const result: TickRunResult = { trigger: trigger.kind, parts: {}, partMs: {} };
  let chainError: unknown;
  let sending: Promise<void>;
  if (trigger.kind === 'chain') {
    result.slot = trigger.slot;
    const next = successorSlot(trigger.slot, clock.now(), periodMs);
    result.successor = next;
    sending = options.queue.send(next, 'next', invocation.signal).catch((err: unknown) => {
      chainError = err;
    });
  } else {
    sending = keepChain(options.queue, clock.now(), periodMs, invocation.signal).then(
      (outcome) => {
        result.chain = outcome.chain;
        if (outcome.slot !== undefined) result.successor = outcome.slot;
      },
      (err: unknown) => {
        chainError = err;
      },
    );
    // A live chain does the work; a keeper that found none renews the leases now.
    await sending;
    if (result.chain === 'alive') return result;
  }

  const parts = sandboxParts(deps, options.publisher);
  const workUntil = Math.min(
    clock.monotonic() + config.tick.workMs,
    invocation.deadline - TICK_DEADLINE_MARGIN_MS,
  );
  const stop = AbortSignal.any([
    invocation.signal,
    AbortSignal.timeout(Math.max(0, Math.floor(workUntil - clock.monotonic()))),
  ]);
  // Every request of a part is cut off at the margin: a hung one (DynamoDB frozen mid-tick)
  // must not run the tick into its timeout, which would hold the chain back a visibility timeout.
  const finish = AbortSignal.any([
    invocation.signal,
    AbortSignal.timeout(
      Math.max(0, Math.floor(invocation.deadline - TICK_DEADLINE_MARGIN_MS - clock.monotonic())),
    ),
  ]);
  const fence = trigger.kind === 'chain' ? tickFence(trigger.slot, trigger.receiveCount) : undefined;
  const context = { stop, halt: invocation.signal, log, ...(fence === undefined ? {} : { fence }) };
  const names = trigger.kind === 'keeper' ? (['heartbeat'] as const) : config.tick.parts;
  // The leases are renewed while the gate (DynamoDB) is asked, never behind it.
  const gating = tickGate(deps, invocation, log);
  const heartbeat = parts.heartbeat(gating, names);
  const run = (part: PartWork) => runWithDeadline(finish, () => runPart(part, context, clock, result));
  const running = heartbeat ? [run(heartbeat)] : [];
  const gate = await gating;
  result.gate = gate;
  for (const part of parts.work(gate, names)) running.push(run(part));
  await Promise.all(running);
  await sending;
  logTick(log, result);
  if (chainError !== undefined) {
    throw new TickChainError(`the next tick could not be queued: ${errorMessage(chainError)}`, {
      cause: chainError,
    });
  }
  return result;
}

/** Runs one part, recording its result (or the error that ended it) and its time in `result`. */
async function runPart(
  part: PartWork,
  context: PartContext,
  clock: Dependencies['clock'],
  result: TickRunResult,
): Promise<void> {
  const started = clock.monotonic();
  try {
    result.parts[part.name] = await part.run(context);
  } catch (err) {
    if (!context.stop.aborted)
      context.log.warn({ err, part: part.name }, 'tick part failed; the next tick tries again');
    result.parts[part.name] = { error: errorMessage(err) };
  }
  result.partMs[part.name] = Math.round(clock.monotonic() - started);
}

function sandboxParts(deps: Dependencies, publisher: EventPublisher): TickParts {
  let parts = sandboxes.get(deps);
  if (!parts) {
    parts = new TickParts(deps, publisher);
    sandboxes.set(deps, parts);
  }
  return parts;
}

/**
 * The keeper's check: a queue with no message has lost its chain (a healthy
 * chain always holds the message being processed or its successor), so it
 * starts one with the next period's slot.
 */
async function keepChain(
  queue: TickQueue,
  nowMs: number,
  periodMs: number,
  signal: AbortSignal,
): Promise<{ chain: 'alive' | 'restarted'; slot?: number }> {
  if (!(await queue.isEmpty(signal))) return { chain: 'alive' };
  const slot = slotAt(nowMs, periodMs) + 1;
  await queue.send(slot, 'restart', signal);
  return { chain: 'restarted', slot };
}

function logTick(log: Logger, result: TickRunResult): void {
  const failed = Object.entries(result.parts)
    .filter(([, r]) => typeof r === 'object' && r !== null && 'error' in r)
    .map(([name]) => name);
  const fields = {
    trigger: result.trigger,
    slot: result.slot,
    successor: result.successor,
    chain: result.chain,
    gate: result.gate,
    partMs: result.partMs,
    ...(failed.length > 0 ? { failed } : {}),
  };
  if (result.chain === 'restarted') log.warn(fields, 'no tick chain in the queue: started one');
  else log.debug(fields, 'tick done');
}
