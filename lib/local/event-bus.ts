import { randomUUID } from 'node:crypto';
import type {
  PutEventsCommandInput,
  PutEventsRequestEntry,
  PutEventsResultEntry,
} from '@aws-sdk/client-eventbridge';
import { type Clock, systemClock } from '../clock.ts';
import type { AsyncRetryPolicy } from './async-retry-policy.ts';
import {
  type DeadLetter,
  type DeliveryRecord,
  matches,
  type Reorder,
  type Rule,
  reorder,
} from './event-rule.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './lambda-context.ts';
import {
  type BusEvent,
  DEFAULT_MAX_REQUEST_BYTES,
  isEntryFailure,
  toBusEvent,
  validateRequest,
} from './put-events-entry.ts';

export type { DeadLetter, DeliveryRecord, EventPattern, Reorder, Rule } from './event-rule.ts';
export {
  type BusEvent,
  EventBusValidationError,
  entrySize,
  MAX_ENTRIES_PER_CALL,
} from './put-events-entry.ts';

export interface PutEventsResult {
  FailedEntryCount: number;
  Entries: PutEventsResultEntry[];
}

export interface LocalEventBusOptions {
  clock?: Clock;
  region?: string;
  account?: string;
  /** Request size limit (sum of entry sizes). Defaults to {@link DEFAULT_MAX_REQUEST_BYTES}, 256 KiB. */
  maxRequestBytes?: number;
  /** Retries after a failed delivery before the event is dead-lettered. Default 0. */
  retries?: number;
  /** Wait between retries, on the bus's clock. Default 0. */
  retryDelayMs?: number;
  /**
   * The deployed policy instead of `retries` and `retryDelayMs`
   * (async-retry-policy.ts): the function's retries with Lambda's waits, and
   * no retry of an event older than its maximum age.
   */
  retryPolicy?: Pick<AsyncRetryPolicy, 'retries' | 'retryDelaysMs' | 'maxEventAgeMs'>;
  /** Source of randomness for `reorder: 'shuffle'`. */
  random?: () => number;
  /**
   * `published` and `deliveries` keep at least this many newest records, and
   * at most a tenth more, so a long `npm start` stays small. Default 10 000.
   */
  logLimit?: number;
}

interface Job {
  rule: Rule;
  /** When the bus accepted the event, monotonic time of its clock: the start of its age. */
  acceptedAt: number;
  /** Serialised once; each attempt gets its own parsed copy, as each Lambda invocation would. */
  json: string;
}

/**
 * Whether EventBridge would retry a delivery that failed with `error`: not
 * when the target says so (`retryable: false`, e.g. a function that no longer
 * exists), which EventBridge sends to the dead-letter queue without retrying.
 */
function isRetryable(error: unknown): boolean {
  return !(typeof error === 'object' && error !== null && 'retryable' in error && error.retryable === false);
}

/**
 * An in-process EventBridge bus. `putEvents` has the AWS API's contract
 * (1 to 10 entries, request size limit as a `ValidationException`, per-entry
 * failures for bad entries) and delivers to matching rules, after it returns,
 * the envelope AWS delivers to a Lambda target.
 *
 * The other fields and methods are test knobs for EventBridge's at-least-once,
 * unordered delivery. Retries model EventBridge plus Lambda's
 * asynchronous-invocation retries as one count: `retries` at a fixed
 * `retryDelayMs` (short, for tests), or the deployed `retryPolicy`.
 * A target that waits (a Lambda function at its reserved concurrency queues
 * the event) has not failed: throttling never uses up retries, as on AWS.
 *
 * Limits: one bus (`EventBusName` and `TraceHeader` are ignored), patterns
 * match `source` and `detail-type` only, and the request size limit is
 * checked with AWS's entry-size formula, not by HTTP body size.
 */
export class LocalEventBus {
  /** Every event is delivered this many times (concurrently, same event id). */
  duplicate = 1;
  /** Order in which each batch's deliveries are started. */
  reorder: Reorder = 'none';
  retries: number;
  retryDelayMs: number;
  /** Waits before each retry (the last repeats) and the event's maximum age; overrides `retryDelayMs`. */
  retryDelaysMs: readonly number[] | undefined;
  maxEventAgeMs: number | undefined;
  /** Every accepted event, in acceptance order. */
  readonly published: BusEvent[] = [];
  readonly deliveries: DeliveryRecord[] = [];
  readonly deadLetters: DeadLetter[] = [];

  readonly #rules = new Map<string, Rule>();
  readonly #clock: Clock;
  readonly #region: string;
  readonly #account: string;
  readonly #maxRequestBytes: number;
  readonly #random: () => number;
  readonly #logLimit: number;
  #held: Job[] | undefined;
  #failEntries: { predicate: (entry: PutEventsRequestEntry) => boolean; errorCode: string } | undefined;
  #drop: ((event: BusEvent, rule: string) => boolean) | undefined;
  #inFlight = 0;
  #idle: (() => void)[] = [];

  constructor(options: LocalEventBusOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#region = options.region ?? LOCAL_REGION;
    this.#account = options.account ?? LOCAL_ACCOUNT_ID;
    this.#maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    this.retries = options.retryPolicy?.retries ?? options.retries ?? 0;
    this.retryDelayMs = options.retryDelayMs ?? 0;
    this.retryDelaysMs = options.retryPolicy?.retryDelaysMs;
    this.maxEventAgeMs = options.retryPolicy?.maxEventAgeMs;
    this.#random = options.random ?? Math.random;
    this.#logLimit = options.logLimit ?? 10_000;
  }

  addRule(rule: Rule): void {
    this.#rules.set(rule.name, rule);
  }

  removeRule(name: string): void {
    this.#rules.delete(name);
  }

  /**
   * PutEvents. Rejects the whole request with `ValidationException` for 0 or
   * more than 10 entries or when the entries together exceed the size limit;
   * otherwise reports each entry: an `EventId`, or `ErrorCode`/`ErrorMessage`
   * (missing Source/DetailType/Detail, Detail not a JSON object, reserved `aws.`
   * source, or a failure injected with {@link failEntries}). Failed entries are
   * not delivered; the caller must resend them.
   */
  async putEvents(entries: PutEventsCommandInput['Entries']): Promise<PutEventsResult> {
    validateRequest(entries, this.#maxRequestBytes);
    const results: PutEventsResultEntry[] = [];
    const accepted: BusEvent[] = [];
    const meta = { nowMs: this.#clock.now(), account: this.#account, region: this.#region };
    for (const entry of entries ?? []) {
      const parsed = toBusEvent(entry, { ...meta, id: randomUUID() });
      if (isEntryFailure(parsed)) {
        results.push(parsed);
      } else if (this.#failEntries?.predicate(entry)) {
        const code = this.#failEntries.errorCode;
        results.push({ ErrorCode: code, ErrorMessage: `${code} (injected by the local bus)` });
      } else {
        accepted.push(parsed);
        results.push({ EventId: parsed.id });
      }
    }
    this.#log(this.published, ...accepted);
    this.#dispatch(accepted);
    return { FailedEntryCount: results.filter((r) => r.ErrorCode).length, Entries: results };
  }

  /**
   * An event an AWS service puts on the account's default bus itself (an
   * "ECS Task State Change", say): not through PutEvents, whose `aws.`
   * sources are reserved, but delivered to matching rules the same way.
   */
  deliverServiceEvent(event: BusEvent): void {
    this.#log(this.published, event);
    this.#dispatch([event]);
  }

  /** Makes `putEvents` fail the entries `predicate` picks, as AWS does now and then. `undefined` stops it. */
  failEntries(
    predicate: ((entry: PutEventsRequestEntry) => boolean) | undefined,
    errorCode = 'InternalFailure',
  ): void {
    this.#failEntries = predicate && { predicate, errorCode };
  }

  /** Silently drops the deliveries `predicate` picks (logged as `dropped`). `undefined` stops it. */
  drop(predicate: ((event: BusEvent, rule: string) => boolean) | undefined): void {
    this.#drop = predicate;
  }

  /** Withholds deliveries from now on, until {@link release}. */
  hold(): void {
    this.#held ??= [];
  }

  /** Starts the withheld deliveries, in the order they were withheld unless told otherwise, and stops holding. */
  release(options: { order?: Reorder } = {}): void {
    const jobs = this.#held ?? [];
    this.#held = undefined;
    this.#start(reorder(jobs, options.order ?? 'none', this.#random));
  }

  /** How many deliveries are withheld. */
  get heldCount(): number {
    return this.#held?.length ?? 0;
  }

  /** Resolves once no delivery is in flight (withheld deliveries do not count). */
  whenIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #log<T>(list: T[], ...items: T[]): void {
    list.push(...items);
    // Trimmed by a tenth at a time: trimming one entry per push moves the whole list every time.
    if (list.length > this.#logLimit + Math.ceil(this.#logLimit / 10)) {
      list.splice(0, list.length - this.#logLimit);
    }
  }

  #dispatch(events: BusEvent[]): void {
    const jobs: Job[] = [];
    for (const event of events) {
      const json = JSON.stringify(event);
      for (const rule of this.#rules.values()) {
        if (!matches(rule.pattern, event)) continue;
        for (let copy = 0; copy < Math.max(1, this.duplicate); copy++)
          jobs.push({ rule, json, acceptedAt: this.#clock.monotonic() });
      }
    }
    const ordered = reorder(jobs, this.reorder, this.#random);
    if (this.#held) this.#held.push(...ordered);
    else this.#start(ordered);
  }

  /** Asynchronous, like AWS: nothing is delivered before `putEvents` has returned. */
  #start(jobs: Job[]): void {
    if (jobs.length === 0) return;
    this.#inFlight += jobs.length;
    setImmediate(() => {
      // #deliver settles target failures itself; anything else (a throwing drop predicate) must surface.
      for (const job of jobs) void this.#deliver(job);
    });
  }

  /** The wait before the retry that follows attempt number `attempt`. */
  #retryDelay(attempt: number): number {
    const delays = this.retryDelaysMs;
    if (!delays || delays.length === 0) return this.retryDelayMs;
    return delays[Math.min(attempt, delays.length) - 1] ?? 0;
  }

  /** Whether the event would pass its maximum age before a retry after `wait`: Lambda drops it then. */
  #tooOld(job: Job, wait: number): boolean {
    const age = this.#clock.monotonic() + wait - job.acceptedAt;
    return this.maxEventAgeMs !== undefined && age > this.maxEventAgeMs;
  }

  async #deliver(job: Job): Promise<void> {
    try {
      const first = JSON.parse(job.json) as BusEvent;
      if (this.#drop?.(first, job.rule.name)) {
        this.#log(this.deliveries, {
          rule: job.rule.name,
          eventId: first.id,
          attempt: 1,
          status: 'dropped',
          event: first,
        });
        return;
      }
      for (let attempt = 1; ; attempt++) {
        const event = attempt === 1 ? first : (JSON.parse(job.json) as BusEvent);
        const record = { rule: job.rule.name, eventId: event.id, attempt, event };
        try {
          await job.rule.target(event);
          this.#log(this.deliveries, { ...record, status: 'delivered' });
          return;
        } catch (error) {
          this.#log(this.deliveries, { ...record, status: 'failed', error });
          const wait = this.#retryDelay(attempt);
          if (attempt > this.retries || !isRetryable(error) || this.#tooOld(job, wait)) {
            this.deadLetters.push({ rule: job.rule.name, event, error, attempts: attempt });
            return;
          }
          if (wait > 0) await this.#clock.sleep(wait);
        }
      }
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }
}
