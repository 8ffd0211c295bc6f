import type { PutEventsEntry, PutEventsResponse } from '../events/publisher.ts';
import type { DeploymentFunction } from './deployment-handlers.ts';
import type { SerializedError } from './serialized-error.ts';

/**
 * The messages between a deployment and its function host process (the
 * sandbox of every function): invocations go in, results come back, and
 * pod-watch's PutEvents calls go out to the deployment's event bus, which
 * stays in the parent as EventBridge stays up when sandboxes die.
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
  | { type: 'init'; env: Record<string, string | undefined> }
  | { type: 'invoke'; id: number; name: DeploymentFunction; event: unknown; context: HostInvocationContext }
  | { type: 'abort'; id: number; reason: string }
  | { type: 'put-events-result'; id: number; response?: PutEventsResponse; error?: SerializedError };

export type HostMessage =
  | { type: 'ready' }
  | { type: 'result'; id: number; status: 'ok'; result: unknown }
  | { type: 'result'; id: number; status: 'error'; error: SerializedError }
  | { type: 'put-events'; id: number; entries: PutEventsEntry[] };
