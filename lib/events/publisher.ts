import { type Clock, systemClock } from '../clock.ts';
import { podKey } from '../kube/pod-key.ts';
import { errorMessage } from '../util/error-message.ts';
import { mapSettledLimit } from '../util/map-limit.ts';
import {
  MAX_POD_EVENT_DETAIL_BYTES,
  POD_EVENT_DETAIL_TYPE,
  POD_EVENT_SOURCE,
  type PodEventDetail,
  podEventDetailSchema,
} from './pod-event.ts';

/**
 * Publishing pod events, without the AWS SDK: the rules (validation, batches
 * of at most 10, resending only the failed entries, bounded retries) live
 * here; `eventbridge-publisher.ts` and `lib/local/local-bus-publisher.ts` only
 * supply the PutEvents call.
 */

/** At most this many entries per PutEvents call (EventBridge API limit). */
export const MAX_ENTRIES_PER_PUT = 10;

/** One PutEvents request entry, in the API's field names (a structural subset of the SDK's). */
export interface PutEventsEntry {
  Source: string;
  DetailType: string;
  Detail: string;
  Resources?: string[];
  EventBusName?: string;
}

/** The result of one entry: an EventId, or ErrorCode and ErrorMessage. */
export interface PutEventsEntryResult {
  EventId?: string;
  ErrorCode?: string;
  ErrorMessage?: string;
}

export interface PutEventsResponse {
  FailedEntryCount?: number;
  /** One result per request entry, in request order. */
  Entries?: PutEventsEntryResult[];
}

/**
 * Sends one PutEvents request of 1 to 10 entries. Resolves with the per-entry
 * results (some entries may have failed); rejects when the request as a whole
 * failed (throttled, network, validation).
 */
export type PutEventsSender = (entries: PutEventsEntry[]) => Promise<PutEventsResponse>;

/**
 * Publishes pod events. Events are hints (pod-sync reads the pod itself): publishing one twice is
 * harmless, losing one is not, so a caller that gets an error must publish
 * the same details again later (the watcher re-watches from its bookmark).
 */
export interface EventPublisher {
  /**
   * Publishes every detail, in calls of at most 10 entries, resending only the
   * entries that failed, a bounded number of times. Resolves once EventBridge
   * accepted every entry.
   * @throws InvalidPodEventDetailError before anything is sent when a detail
   * does not match the schema or is larger than MAX_POD_EVENT_DETAIL_BYTES.
   * @throws PublishError when some entries still failed after the retries (the
   * others were published).
   */
  publish(details: readonly PodEventDetail[], options?: PublishOptions): Promise<void>;
}

export interface PublishOptions {
  signal?: AbortSignal;
  /** The event's `resources` (pod-watch's hints, see POD_EVENT_HINTS), by the index of its detail. */
  resources?: ReadonlyArray<readonly string[] | undefined>;
}

/** A detail that must never be sent; nothing of the call was published. */
export class InvalidPodEventDetailError extends Error {
  override readonly name = 'InvalidPodEventDetailError';
}

/** One entry that EventBridge did not accept. */
export interface FailedPodEvent {
  detail: PodEventDetail;
  errorCode: string;
  errorMessage: string;
}

/** Some entries were still not accepted after the retries; `failed` lists them with the last error. */
export class PublishError extends Error {
  override readonly name = 'PublishError';
  constructor(
    readonly failed: FailedPodEvent[],
    readonly publishedCount: number,
    options?: ErrorOptions,
  ) {
    const codes = [...new Set(failed.map((f) => f.errorCode))].join(', ');
    const first = failed[0];
    super(
      `${failed.length} pod event(s) not published (${codes})` +
        (first ? `, e.g. ${first.detail.type} ${podKey(first.detail)}: ${first.errorMessage}` : ''),
      options,
    );
  }
}

export interface PodEventPublisherOptions {
  send: PutEventsSender;
  /** EventBusName of every entry; the sender's default bus when omitted. */
  busName?: string;
  /** Calls of one round in flight at once. Default 4. */
  maxConcurrentCalls?: number;
  /** Rounds in all: the first send plus resends of the failed entries. Default 4. */
  maxAttempts?: number;
  /** Wait before the first resend, doubling up to `maxDelayMs`, jittered to 50-100 %. Default 100. */
  baseDelayMs?: number;
  /** Default 2000. */
  maxDelayMs?: number;
  clock?: Clock;
  random?: () => number;
  /** Called with the number of entries the bus accepted, after each publish call (also a failed one). */
  onPublished?: (count: number) => void;
}

interface Pending {
  detail: PodEventDetail;
  entry: PutEventsEntry;
  lastError?: { code: string; message: string };
}

/** The EventPublisher over any PutEvents implementation. */
export class PodEventPublisher implements EventPublisher {
  readonly #send: PutEventsSender;
  readonly #busName: string | undefined;
  readonly #maxConcurrentCalls: number;
  readonly #maxAttempts: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #onPublished: ((count: number) => void) | undefined;

  constructor(options: PodEventPublisherOptions) {
    this.#send = options.send;
    this.#busName = options.busName;
    this.#maxConcurrentCalls = Math.max(1, options.maxConcurrentCalls ?? 4);
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 4);
    this.#baseDelayMs = options.baseDelayMs ?? 100;
    this.#maxDelayMs = options.maxDelayMs ?? 2_000;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#onPublished = options.onPublished;
  }

  async publish(details: readonly PodEventDetail[], options: PublishOptions = {}): Promise<void> {
    // Validate everything first, so that a bad detail sends nothing at all.
    let pending: Pending[] = details.map((detail, i) => ({
      detail,
      entry: this.#entry(detail, options.resources?.[i]),
    }));
    const total = pending.length;
    const givenUp: Pending[] = [];
    let lastRequestError: unknown;
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > this.#maxAttempts) break;
      if (attempt > 1) {
        const delay = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** (attempt - 2));
        try {
          await this.#clock.sleep(delay * (0.5 + this.#random() / 2), options.signal);
        } catch (err) {
          this.#onPublished?.(total - givenUp.length - pending.length);
          throw this.#failure([...givenUp, ...pending], total, err);
        }
      }
      const chunks: Pending[][] = [];
      for (let i = 0; i < pending.length; i += MAX_ENTRIES_PER_PUT)
        chunks.push(pending.slice(i, i + MAX_ENTRIES_PER_PUT));
      const settled = await mapSettledLimit(chunks, this.#maxConcurrentCalls, (chunk) =>
        this.#send(chunk.map((p) => p.entry)),
      );
      const failed: Pending[] = [];
      settled.forEach((result, i) => {
        const chunk = chunks[i] ?? [];
        if (result.status === 'rejected') {
          lastRequestError = result.reason;
          const lastError = { code: errorName(result.reason), message: errorMessage(result.reason) };
          // A request rejected as malformed fails the same way when resent.
          const into = isRetryableRequestError(result.reason) ? failed : givenUp;
          for (const p of chunk) into.push({ ...p, lastError });
          return;
        }
        const entries = result.value.Entries ?? [];
        chunk.forEach((p, j) => {
          const r = entries[j];
          if (r?.EventId && !r.ErrorCode) return;
          failed.push({
            ...p,
            lastError: {
              code: r?.ErrorCode ?? 'MissingResult',
              message: r?.ErrorMessage ?? 'PutEvents returned no result for this entry',
            },
          });
        });
      });
      pending = failed;
    }
    const notPublished = givenUp.length + pending.length;
    this.#onPublished?.(total - notPublished);
    if (notPublished > 0) {
      throw this.#failure([...givenUp, ...pending], total, lastRequestError);
    }
  }

  #entry(detail: PodEventDetail, resources: readonly string[] | undefined): PutEventsEntry {
    // Size first: an oversized detail is named as such, whatever else is wrong with it.
    const size = Buffer.byteLength(JSON.stringify(detail) ?? '', 'utf8');
    if (size > MAX_POD_EVENT_DETAIL_BYTES) {
      throw new InvalidPodEventDetailError(
        `pod event detail for ${podKey(detail)} is ${size} bytes, over the ${MAX_POD_EVENT_DETAIL_BYTES}-byte limit`,
      );
    }
    const parsed = podEventDetailSchema.safeParse(detail);
    if (!parsed.success) {
      const fields = parsed.error.issues.map((i) => `${i.path.join('.') || 'detail'}: ${i.message}`);
      throw new InvalidPodEventDetailError(`invalid pod event detail: ${fields.join('; ')}`);
    }
    const json = JSON.stringify(parsed.data);
    return {
      Source: POD_EVENT_SOURCE,
      DetailType: POD_EVENT_DETAIL_TYPE,
      Detail: json,
      ...(resources && resources.length > 0 ? { Resources: [...resources] } : {}),
      ...(this.#busName ? { EventBusName: this.#busName } : {}),
    };
  }

  #failure(pending: Pending[], total: number, cause: unknown): PublishError {
    const failed = pending.map((p) => ({
      detail: p.detail,
      errorCode: p.lastError?.code ?? 'NotSent',
      errorMessage: p.lastError?.message ?? 'not sent',
    }));
    return new PublishError(failed, total - pending.length, cause === undefined ? undefined : { cause });
  }
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : 'Error';
}

/**
 * Whether resending a whole failed request can help: not for a request
 * EventBridge rejected as malformed or unauthorised (a client fault other than
 * throttling), yes for throttling, server faults and network errors.
 */
export function isRetryableRequestError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return true;
  const name = 'name' in err && typeof err.name === 'string' ? err.name : '';
  if (/throttl|limitexceeded|toomanyrequests/i.test(name)) return true;
  return !('$fault' in err && err.$fault === 'client');
}
