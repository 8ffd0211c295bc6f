import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { currentDeadline } from '../deadline.ts';

/**
 * How every AWS SDK client of the project is configured, in this one place:
 * the functions' DynamoDB (lib/state/dynamodb-clients.ts) and SQS
 * (lib/tick/sqs-tick-queue.ts) clients, EventBridge, Secrets Manager, SSM,
 * EKS, the providers' clients and tooling's (pass `awsClientOptions()` into
 * their constructors). The SDK speaks the protocols, signs, resolves
 * credentials and endpoints; what is set here:
 *
 * - A request that does not finish within `requestTimeoutMs` (connection
 *   included) is destroyed and fails with a `TimeoutError`. The smithy
 *   handler's `requestTimeout` alone only logs a warning and lets the
 *   request hang; `throwOnRequestTimeout` makes it fire.
 * - A request made inside {@link runWithDeadline} (lib/deadline.ts: the
 *   invocation's deadline) is aborted when that deadline passes, combined
 *   with any `abortSignal` the caller gave the command (an `AbortError`,
 *   never retried).
 * - The SDK's standard retry strategy: throttling
 *   (`ThrottlingException`, `ProvisionedThroughputExceededException`, HTTP
 *   429), timeouts, network errors and 5xx answers are retried, up to
 *   `maxAttempts` attempts in all, with exponential backoff and full jitter
 *   (base 100 ms, 500 ms for throttling, at most 20 s), drawing from a retry
 *   quota so that a sustained outage stops costing retries.
 * - Connections are kept alive between calls and invocations (one agent per
 *   client, as many sockets as calls in flight, up to 50).
 */
export interface AwsClientSettings {
  /** One HTTP attempt, connection included. Default 5000. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries included. Default 3. */
  maxAttempts?: number;
}

/** One HTTP attempt, connection included. */
export const DEFAULT_AWS_REQUEST_TIMEOUT_MS = 5_000;
/** Attempts per call, retries included. */
export const DEFAULT_AWS_MAX_ATTEMPTS = 3;
/** Sockets per client and protocol; the SDK's default. */
const MAX_SOCKETS = 50;

/** The smithy Node.js handler that also aborts requests at the current invocation's deadline. */
export class DeadlineHttpHandler extends NodeHttpHandler {
  override handle(...args: Parameters<NodeHttpHandler['handle']>): ReturnType<NodeHttpHandler['handle']> {
    const [request, options = {}] = args;
    const deadline = currentDeadline();
    if (!deadline) return super.handle(request, options);
    const given = options.abortSignal;
    const abortSignal = given instanceof AbortSignal ? AbortSignal.any([given, deadline]) : deadline;
    return super.handle(request, { ...options, abortSignal });
  }
}

/** Options to spread into an AWS SDK v3 client's constructor. */
export function awsClientOptions(settings: AwsClientSettings = {}): {
  maxAttempts: number;
  retryMode: 'standard';
  requestHandler: DeadlineHttpHandler;
} {
  return {
    maxAttempts: settings.maxAttempts ?? DEFAULT_AWS_MAX_ATTEMPTS,
    retryMode: 'standard',
    requestHandler: new DeadlineHttpHandler({
      requestTimeout: settings.requestTimeoutMs ?? DEFAULT_AWS_REQUEST_TIMEOUT_MS,
      throwOnRequestTimeout: true,
      httpAgent: new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
      httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
    }),
  };
}
