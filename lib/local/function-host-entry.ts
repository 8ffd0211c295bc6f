/**
 * The process a {@link FunctionHost} forks: one warm sandbox for every
 * function of a deployment. It builds the real handlers from the
 * configuration the parent sends, runs the invocations it is given
 * (concurrently, as the in-process deployment does), and sends pod-watch's
 * PutEvents calls to the parent's event bus and the tick's queue calls to
 * the parent's tick queue. Killing it is killing every
 * sandbox at once: nothing in flight here survives.
 */
import type { Context } from 'aws-lambda';
import type { PutEventsEntry, PutEventsResponse } from '../events/publisher.ts';
import { PodEventPublisher } from '../events/publisher.ts';
import type { TickQueue } from '../tick/tick-queue.ts';
import { createDeploymentHandlers, type DeploymentFunction } from './deployment-handlers.ts';
import type { HostMessage, ParentMessage, TickQueueCall } from './function-host-protocol.ts';
import { runInInvocation } from './invocation-scope.ts';
import { createLambdaContext, SandboxCrashedError } from './lambda-context.ts';
import type { LambdaHandler } from './lambda-function.ts';
import { reviveError, serializeError } from './serialized-error.ts';

function send(message: HostMessage): void {
  process.send?.(message);
}

let handlers: Record<DeploymentFunction, LambdaHandler> | undefined;
const running = new Map<number, AbortController>();
const putEventsCalls = new Map<number, (outcome: { response?: PutEventsResponse; error?: Error }) => void>();
let nextPutEventsId = 1;
const tickQueueCalls = new Map<number, (outcome: { empty?: boolean; error?: Error }) => void>();
let nextTickQueueId = 1;

function putEvents(entries: PutEventsEntry[]): Promise<PutEventsResponse> {
  const id = nextPutEventsId++;
  return new Promise((resolve, reject) => {
    putEventsCalls.set(id, (outcome) => {
      if (outcome.response) resolve(outcome.response);
      else reject(outcome.error ?? new Error('PutEvents: no response'));
    });
    send({ type: 'put-events', id, entries });
  });
}

function callTickQueue(call: TickQueueCall): Promise<boolean> {
  const id = nextTickQueueId++;
  return new Promise((resolve, reject) => {
    tickQueueCalls.set(id, (outcome) => {
      if (outcome.error) reject(outcome.error);
      else resolve(outcome.empty === true);
    });
    send({ type: 'tick-queue', id, call });
  });
}

/** The parent's tick queue, through messages (undefined unless the parent has one). */
const parentTickQueue: TickQueue = {
  send: async (message) => {
    await callTickQueue({ op: 'send', ...message });
  },
  isEmpty: () => callTickQueue({ op: 'is-empty' }),
};

async function invoke(message: Extract<ParentMessage, { type: 'invoke' }>): Promise<void> {
  const controller = new AbortController();
  running.set(message.id, controller);
  try {
    const handler = handlers?.[message.name];
    if (!handler) throw new Error(`function host: no handler ${message.name} (not initialised)`);
    const context = createLambdaContext({ ...message.context, signal: controller.signal });
    const timer = setTimeout(
      () => controller.abort(new Error('deadline')),
      context.getRemainingTimeInMillis(),
    );
    timer.unref();
    const scope = {
      functionName: message.name,
      requestId: message.context.requestId,
      signal: controller.signal,
    };
    try {
      const result: unknown = await runInInvocation(scope, () =>
        (handler as (event: unknown, context: Context) => unknown)(message.event, context),
      );
      send({ type: 'result', id: message.id, status: 'ok', result: result === undefined ? null : result });
    } finally {
      clearTimeout(timer);
    }
  } catch (error) {
    send({ type: 'result', id: message.id, status: 'error', error: serializeError(error) });
  } finally {
    running.delete(message.id);
  }
}

function onMessage(message: ParentMessage): void {
  switch (message.type) {
    case 'init':
      handlers = createDeploymentHandlers(
        message.env,
        new PodEventPublisher({ send: putEvents }),
        message.tickQueue ? parentTickQueue : undefined,
        message.kubeconfigs,
      );
      send({ type: 'ready' });
      return;
    case 'invoke':
      void invoke(message);
      return;
    case 'abort':
      running.get(message.id)?.abort(new SandboxCrashedError(message.reason));
      return;
    case 'put-events-result': {
      const settle = putEventsCalls.get(message.id);
      putEventsCalls.delete(message.id);
      settle?.({
        ...(message.response ? { response: message.response } : {}),
        ...(message.error ? { error: reviveError(message.error) } : {}),
      });
      return;
    }
    case 'tick-queue-result': {
      const settle = tickQueueCalls.get(message.id);
      tickQueueCalls.delete(message.id);
      settle?.({
        ...(message.empty === undefined ? {} : { empty: message.empty }),
        ...(message.error ? { error: reviveError(message.error) } : {}),
      });
      return;
    }
  }
}

// An orphan must not outlive the deployment that forked it.
process.on('disconnect', () => process.exit(1));
process.on('message', onMessage);
