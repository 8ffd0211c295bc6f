import type { Dependencies } from '../app/dependencies.ts';
import { runWithDeadline, runWithTimeout } from '../deadline.ts';
import type { EventPublisher } from '../events/publisher.ts';
import { type Invocation, invocationLog } from '../invocation.ts';
import type { Logger } from '../log/logger.ts';
import type { TickChainRestartReason } from '../metrics/emf.ts';
import { newestLeaseRenewal } from '../node/node-lease.ts';
import { errorMessage } from '../util/error-message.ts';
import { type TickGate, tickGate } from './tick-gate.ts';
import { type PartContext, type PartWork, TickParts, type TickWork } from './tick-parts.ts';
import type { TickQueue } from './tick-queue.ts';
import { restartGroup, slotAt, successorSlot, TICK_MESSAGE_GROUP } from './tick-slot.ts';
import type { RejectedTick, TickTrigger } from './tick-trigger.ts';

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
  /** Keeper: whether the queue held a live chain, or the chain was started again (and why). */
  chain?: 'alive' | 'restarted';
  restart?: TickChainRestartReason;
  /** Messages of the batch that were not tick messages: dropped. */
  rejected?: RejectedTick[];
  gate?: TickGate;
  /** Each part's result, or the error that ended it. */
  parts: Record<string, unknown>;
  /** How long each part took (ms). */
  partMs: Record<string, number>;
  /** What failed outside the parts after the successor was queued: logged, the message deleted all the same. */
  error?: string;
}

export interface TickOptions {
  queue: TickQueue;
  /** Where pod-watch publishes pod events. */
  publisher: EventPublisher;
  /** Builds a cold start's parts; default {@link TickParts}. */
  parts?: (deps: Dependencies, publisher: EventPublisher) => TickWork;
}

/** A chain whose leases went unrenewed this many renew intervals is taken for stuck by the keeper. */
export const STALE_CHAIN_PERIODS = 2;
/** The longest the keeper waits for the leases it reads to judge the chain. */
export const KEEPER_READ_BUDGET_MS = 3_000;

/** The parts of a cold start, kept across the invocations of its warm sandbox. */
const sandboxes = new WeakMap<Dependencies, TickWork>();

/**
 * The tick function's one entry point. A chain tick first sends the next
 * message to its own message group (so the chain goes on even if this
 * invocation dies: the queue holds it back one period, and then behind this
 * message until this one is deleted or delivered again), then starts the
 * heartbeat, which renews the leases at once, and asks the release gate (cut
 * off after a few seconds) meanwhile; then runs its parts until its work
 * time is up. With the gate open: the rest of the heartbeat, pod-watch,
 * pod-status and the reconciler. Refused, or the state table unreachable:
 * the lease renewals only, and the StateStoreUnavailable condition when
 * unreachable (HeartbeatTick in tick-parts.ts).
 *
 * Once its successor is queued, a tick succeeds whatever else fails: a
 * failed invocation is delivered again before its successor (FIFO), so a
 * failure that repeats would hold the chain until the message's retention
 * ran out. Only a successor that could not be queued fails the invocation,
 * whose message, delivered again, is then the chain's standby.
 *
 * A batch of messages that are not tick messages (another release's schema,
 * a message sent by hand, a truncated body) is logged by message id and
 * reason, dropped (the invocation succeeds) and followed by a successor for
 * the next slot, as a chain tick's: it may have been the chain's only
 * message. A duplicate successor is dropped by its deduplication id, or
 * merges with the live chain within a period (tick-slot.ts). Such a tick
 * renews the leases only, and leaves the rest to the chain's ticks.
 *
 * The keeper (the once-a-minute schedule) starts the chain again when the
 * queue holds no message, or when the nodes' leases went unrenewed for
 * {@link STALE_CHAIN_PERIODS} renew intervals while it holds some (a head
 * that keeps failing: the new chain runs in a group of its own), and then
 * renews the leases at once; while the chain lives it does nothing else.
 */
export async function tick(
  deps: Dependencies,
  invocation: Invocation,
  trigger: TickTrigger,
  options: TickOptions,
): Promise<TickRunResult> {
  const { clock, config } = deps;
  const log = invocationLog(deps.log, invocation);
  const periodMs = config.node.leaseRenewIntervalMs;
  const result: TickRunResult = { trigger: trigger.kind, parts: {}, partMs: {} };
  let chainError: unknown;
  let sending: Promise<void>;
  if (trigger.kind === 'keeper') {
    sending = keepChain(deps, options.queue, periodMs, invocation.signal).then(
      (outcome) => {
        result.chain = outcome.chain;
        if (outcome.slot !== undefined) result.successor = outcome.slot;
        if (outcome.reason !== undefined) {
          result.restart = outcome.reason;
          deps.metrics.tickChainRestarted(outcome.reason);
        }
      },
      (err: unknown) => {
        chainError = err;
      },
    );
    // A live chain does the work; a keeper that found none renews the leases now.
    await sending;
    if (result.chain === 'alive') return result;
  } else {
    if (trigger.rejected.length > 0) reject(deps, log, trigger.rejected, result);
    const current = trigger.kind === 'chain' ? trigger.slot : undefined;
    if (current !== undefined) result.slot = current;
    const next = successorSlot(current, clock.now(), periodMs);
    result.successor = next;
    sending = options.queue
      .send({ slot: next, sender: 'next', group: trigger.group }, invocation.signal)
      .catch((err: unknown) => {
        chainError = err;
      });
  }

  try {
    await runParts(deps, invocation, trigger, options, log, result);
  } catch (err) {
    result.error = errorMessage(err);
    await sending;
    if (chainError === undefined) {
      log.error(
        { err, slot: result.slot, successor: result.successor },
        'tick failed after queueing its successor: its message is deleted all the same, not delivered again as a second chain',
      );
    }
  }
  await sending;
  logTick(log, result);
  if (chainError !== undefined) {
    throw new TickChainError(`the next tick could not be queued: ${errorMessage(chainError)}`, {
      cause: chainError,
    });
  }
  return result;
}

/** Logs and counts the messages of a batch that were not tick messages: by id and reason, never their bodies. */
function reject(deps: Dependencies, log: Logger, rejected: RejectedTick[], result: TickRunResult): void {
  result.rejected = rejected;
  for (const r of rejected) {
    log.warn(
      { messageId: r.messageId, reason: r.reason },
      'not a tick message: dropped, and the chain goes on',
    );
  }
  deps.metrics.tickMessagesRejected(rejected.length);
}

/** The tick's work: the heartbeat at once, the rest once the gate answered, each cut off at the margin. */
async function runParts(
  deps: Dependencies,
  invocation: Invocation,
  trigger: TickTrigger,
  options: TickOptions,
  log: Logger,
  result: TickRunResult,
): Promise<void> {
  const { clock, config } = deps;
  const parts = sandboxParts(deps, options);
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
  const context = { stop, halt: invocation.signal, log };
  // Not a tick of the chain (the keeper, a rejected message): the leases only.
  const names = trigger.kind === 'chain' ? config.tick.parts : (['heartbeat'] as const);
  // The leases are renewed while the gate (DynamoDB) is asked, never behind it.
  const gating = tickGate(deps, invocation, log);
  const heartbeat = parts.heartbeat(gating, names);
  const run = (part: PartWork) => runWithDeadline(finish, () => runPart(part, context, clock, result));
  const running = heartbeat ? [run(heartbeat)] : [];
  try {
    const gate = await gating;
    result.gate = gate;
    for (const part of parts.work(gate, names)) running.push(run(part));
  } finally {
    // Whatever failed, the heartbeat already under way is waited for.
    await Promise.all(running);
  }
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

function sandboxParts(deps: Dependencies, options: TickOptions): TickWork {
  let parts = sandboxes.get(deps);
  if (!parts) {
    parts = (options.parts ?? ((d, p) => new TickParts(d, p)))(deps, options.publisher);
    sandboxes.set(deps, parts);
  }
  return parts;
}

/**
 * The keeper's check. A queue with no message has lost its chain (a healthy
 * chain always holds the message being processed or its successor): a chain
 * is started in the usual group. A queue that holds messages while the
 * nodes' leases went unrenewed for {@link STALE_CHAIN_PERIODS} periods holds
 * a chain that does not move (a head that keeps failing is delivered again
 * before anything behind it): a chain is started in a group of its own. When
 * the leases cannot be read (the API server down), the chain is left alone:
 * a restart could not renew them either.
 */
async function keepChain(
  deps: Dependencies,
  queue: TickQueue,
  periodMs: number,
  signal: AbortSignal,
): Promise<{ chain: 'alive' | 'restarted'; slot?: number; reason?: TickChainRestartReason }> {
  const { clock, config, log } = deps;
  if (await queue.isEmpty(signal)) {
    const slot = slotAt(clock.now(), periodMs) + 1;
    await queue.send({ slot, sender: 'restart', group: TICK_MESSAGE_GROUP }, signal);
    return { chain: 'restarted', slot, reason: 'lost' };
  }
  let renewed: number | undefined;
  try {
    renewed = await runWithTimeout(KEEPER_READ_BUDGET_MS, () =>
      newestLeaseRenewal(deps.kube, config.nodeNames),
    );
  } catch (err) {
    log.debug({ err }, "keeper: the leases could not be read; the queue's chain is left alone");
    return { chain: 'alive' };
  }
  const now = clock.now();
  if (renewed === undefined || now - renewed <= STALE_CHAIN_PERIODS * periodMs) return { chain: 'alive' };
  const slot = slotAt(now, periodMs) + 1;
  await queue.send({ slot, sender: 'restart', group: restartGroup(slot) }, signal);
  return { chain: 'restarted', slot, reason: 'stale' };
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
    restart: result.restart,
    gate: result.gate,
    partMs: result.partMs,
    ...(failed.length > 0 ? { failed } : {}),
  };
  if (result.restart === 'lost') log.warn(fields, 'no tick chain in the queue: started one');
  else if (result.restart === 'stale') {
    log.warn(fields, 'the tick chain stopped renewing the leases: started one in a message group of its own');
  } else log.debug(fields, 'tick done');
}
