/**
 * Which failed AWS calls are tried again, and after how long: the AWS SDK's
 * standard retry strategy (@smithy/core's retry module), which
 * lib/aws/aws-json-wire.ts applies to the calls it sends itself (DynamoDB's
 * and SQS's).
 */

/** Why a failed attempt may be tried again; undefined: it may not. */
export type RetryKind = 'throttling' | 'transient' | 'timeout';

/** The SDK's THROTTLING_ERROR_CODES. */
const THROTTLING = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);

/** The SDK's TRANSIENT_ERROR_CODES, and the network errors it retries (NODEJS_NETWORK_ERROR_CODES, and a reset or refused connection). */
const TRANSIENT = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);
const NETWORK = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Base of the exponential backoff, for throttling and for everything else, and its ceiling. */
const BASE_MS = 100;
const THROTTLING_BASE_MS = 500;
const MAX_DELAY_MS = 20_000;

/** The quota's size, and what a retry takes from it (a timeout more). */
const QUOTA_TOKENS = 500;
const RETRY_COST = 5;
const TIMEOUT_RETRY_COST = 10;
/** What a call that succeeded without a retry gives back. */
const NO_RETRY_INCREMENT = 1;

/**
 * The retry quota every call of one client draws from, so that a sustained
 * outage stops costing retries: each retry takes tokens, a success gives
 * back what its last retry took (one token when it needed none).
 */
export class RetryQuota {
  #tokens = QUOTA_TOKENS;

  get tokens(): number {
    return this.#tokens;
  }

  /** Takes a retry's cost; undefined (nothing taken) when the quota cannot pay it. */
  take(kind: RetryKind): number | undefined {
    const cost = kind === 'timeout' ? TIMEOUT_RETRY_COST : RETRY_COST;
    if (this.#tokens < cost) return undefined;
    this.#tokens -= cost;
    return cost;
  }

  /** A call succeeded; `lastCost` is what its last retry took, if it retried. */
  release(lastCost: number | undefined): void {
    this.#tokens = Math.min(QUOTA_TOKENS, this.#tokens + (lastCost ?? NO_RETRY_INCREMENT));
  }
}

/**
 * Whether `err` may be retried, and as what. `modeled` names the errors the
 * service's model marks retryable (the SDK reads that trait from its schemas).
 */
export function retryKind(err: unknown, modeled: ReadonlySet<string> = new Set()): RetryKind | undefined {
  if (!(err instanceof Error)) return undefined;
  if (err.name === 'AbortError') return undefined;
  if (err.name === 'TimeoutError') return 'timeout';
  if (THROTTLING.has(err.name)) return 'throttling';
  if (TRANSIENT.has(err.name) || modeled.has(err.name)) return 'transient';
  const status = statusOf(err);
  if (status === 429) return 'throttling';
  if (status !== undefined && status >= 500) return 'transient';
  const code = 'code' in err ? err.code : undefined;
  if (typeof code === 'string' && NETWORK.has(code)) return 'transient';
  // A socket closed by the server between the request and its answer.
  if (status === undefined && /socket hang up/i.test(err.message)) return 'transient';
  return undefined;
}

/** The HTTP status the service answered with, when it answered. */
function statusOf(err: Error): number | undefined {
  const metadata = '$metadata' in err ? err.$metadata : undefined;
  if (typeof metadata !== 'object' || metadata === null || !('httpStatusCode' in metadata)) return undefined;
  return typeof metadata.httpStatusCode === 'number' ? metadata.httpStatusCode : undefined;
}

/** Full jitter: a random delay up to the exponential backoff of this attempt. */
export function retryDelayMs(kind: RetryKind, attempt: number, random: () => number = Math.random): number {
  const base = kind === 'throttling' ? THROTTLING_BASE_MS : BASE_MS;
  return Math.floor(random() * Math.min(MAX_DELAY_MS, base * 2 ** (attempt - 1)));
}
