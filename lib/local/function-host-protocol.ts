import type { PutEventsEntry, PutEventsResponse } from '../events/publisher.ts';
import type { TickSend } from '../tick/tick-queue.ts';
import type { DeploymentFunction, FunctionKubeconfigs } from './deployment-handlers.ts';
import type { SerializedError } from './serialized-error.ts';

/**
 * The messages between a deployment and its function host process (the
 * sandbox of every function): invocations go in, results come back, and
 * pod-watch's PutEvents calls go out to the deployment's event bus, and the
 * tick's queue calls to its tick queue, which stay in the parent as
 * EventBridge and SQS stay up when sandboxes die.
 */

/** The context fields the host rebuilds a Lambda context from. */
export interface HostInvocationContext {
  functionName: string;
  requestId: string;
  timeoutMs: number;
  /** Epoch ms (system clock) of the invocation's deadline. */
  deadlineMs: number;
  memoryMb?: number;
}

export type ParentMessage =
  | {
      type: 'init';
      env: Record<string, string | undefined>;
      kubeconfigs: FunctionKubeconfigs;
      tickQueue: boolean;
    }
  | { type: 'invoke'; id: number; name: DeploymentFunction; event: unknown; context: HostInvocationContext }
  | { type: 'abort'; id: number; reason: string }
  | { type: 'put-events-result'; id: number; response?: PutEventsResponse; error?: SerializedError }
  | { type: 'tick-queue-result'; id: number; empty?: boolean; error?: SerializedError };

/** A call of the tick's queue (lib/tick/tick-queue.ts): send a slot's message, or ask whether it is empty. */
export type TickQueueCall = ({ op: 'send' } & TickSend) | { op: 'is-empty' };

export type HostMessage =
  | { type: 'ready' }
  | { type: 'result'; id: number; status: 'ok'; result: unknown }
  | { type: 'result'; id: number; status: 'error'; error: SerializedError }
  | { type: 'put-events'; id: number; entries: PutEventsEntry[] }
  | { type: 'tick-queue'; id: number; call: TickQueueCall };
