import { type Clock, systemClock } from '../clock.ts';
import { currentDeadline } from '../deadline.ts';
import type { KubeRequest, KubeResponse } from './kube-request.ts';

/**
 * The retries of every request of the typed Kubernetes clients
 * (kube-http.ts gives each attempt its own timeout and the current
 * invocation's deadline, lib/deadline.ts): the API server's "not now"
 * answers are retried a bounded number of times:
 *
 * - 429 Too Many Requests (API Priority and Fairness, max-inflight limits):
 *   the request was not processed, so any method is retried, after the
 *   `Retry-After` the server asked for (capped), as client-go does.
 * - 500, 502, 503, 504: retried for reads and for writes that are safe to
 *   repeat (PUT with its resourceVersion, PATCH, DELETE with preconditions
 *   answer a repeat with 409 or 404, which callers handle), not for POST: a
 *   create that failed with a 5xx may have happened, and its caller decides.
 *
 * Without `Retry-After` the wait is exponential with full jitter (so that
 * many functions refused at once do not come back at once). A wait that
 * the deadline cuts short ends the retries: the caller gets the last answer.
 * Network failures and timeouts are not retried here: the callers' own
 * loops (the heartbeat's next tick, pod-sync's redelivery) retry them.
 */
export interface KubeRetryOptions {
  /** Attempts per request, the first included. Default 3. */
  maxAttempts?: number;
  /** First wait without Retry-After; doubles per attempt. Default 200. */
  baseDelayMs?: number;
  /** Longest wait without Retry-After. Default 5000. */
  maxDelayMs?: number;
  /** Longest wait a Retry-After header can ask for. Default 10000. */
  maxRetryAfterMs?: number;
  clock?: Clock;
  random?: () => number;
  /** Called as each attempt goes out (request counting). */
  onAttempt?: () => void;
}

const RETRIED_SERVER_ERRORS = new Set([500, 502, 503, 504]);

/** Whether an answer with `status` to a `method` request is worth another attempt. */
export function isRetriableAnswer(status: number, method: string): boolean {
  if (status === 429) return true;
  return RETRIED_SERVER_ERRORS.has(status) && method.toUpperCase() !== 'POST';
}

/** The wait a Retry-After header asks for (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1_000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Wraps `attempt` (one request, its answer whatever the status) with the retries above. */
export function retrying(
  attempt: (request: KubeRequest) => Promise<KubeResponse>,
  options: KubeRetryOptions = {},
): (request: KubeRequest) => Promise<KubeResponse> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const baseDelayMs = options.baseDelayMs ?? 200;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 10_000;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  return async (request) => {
    for (let n = 1; ; n++) {
      const response = await attempt(request);
      if (n >= maxAttempts || !isRetriableAnswer(response.status, request.method)) return response;
      const header = response.headers['retry-after'];
      const asked = retryAfterMs(Array.isArray(header) ? header[0] : header, clock.now());
      const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** (n - 1)) * random();
      const wait = asked !== undefined ? Math.min(asked, maxRetryAfterMs) : backoff;
      try {
        await clock.sleep(wait, currentDeadline());
      } catch {
        return response;
      }
    }
  };
}
