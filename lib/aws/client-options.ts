import { NodeHttpHandler, type NodeHttpHandlerOptions } from '@smithy/node-http-handler';
import { currentDeadline } from '../deadline.ts';
import { DEFAULT_AWS_MAX_ATTEMPTS, DEFAULT_AWS_REQUEST_TIMEOUT_MS } from './defaults.ts';

/**
 * How every AWS SDK client of the project is configured: EventBridge,
 * Secrets Manager, SSM, EKS, the providers' clients, and tooling's DynamoDB
 * and SQS clients (pass `awsClientOptions()` into their constructors). The
 * functions' own DynamoDB and SQS calls (lib/aws/aws-json-wire.ts) keep the
 * same bounds. A function imports this module where it imports an SDK
 * client, when first used: it loads the SDK's HTTP handler.
 *
 * - A request that does not finish within `requestTimeoutMs` (connection
 *   included) is destroyed and fails with a `TimeoutError`. The smithy
 *   handler's `requestTimeout` alone only logs a warning and lets the
 *   request hang; `throwOnRequestTimeout` makes it fire.
 * - A request made inside {@link runWithDeadline} is aborted when that
 *   deadline passes (an `AbortError`, never retried).
 * - Throttling (`ThrottlingException`, `ProvisionedThroughputExceededException`,
 *   HTTP 429), timeouts, network errors and 5xx answers are retried by the
 *   SDK's standard retry strategy: up to `maxAttempts` attempts in all, with
 *   exponential backoff and full jitter (base 100 ms, 500 ms for
 *   throttling, at most 20 s), drawing from a retry quota so that a
 *   sustained outage stops costing retries.
 */
export interface AwsClientSettings {
  /** One HTTP attempt, connection included. Default 5000. */
  requestTimeoutMs?: number;
  /** Attempts per call, retries included. Default 3. */
  maxAttempts?: number;
}

export { DEFAULT_AWS_MAX_ATTEMPTS, DEFAULT_AWS_REQUEST_TIMEOUT_MS };

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
  requestHandler: DeadlineHttpHandler;
} {
  const options: NodeHttpHandlerOptions = {
    requestTimeout: settings.requestTimeoutMs ?? DEFAULT_AWS_REQUEST_TIMEOUT_MS,
    throwOnRequestTimeout: true,
  };
  return {
    maxAttempts: settings.maxAttempts ?? DEFAULT_AWS_MAX_ATTEMPTS,
    requestHandler: new DeadlineHttpHandler(options),
  };
}
