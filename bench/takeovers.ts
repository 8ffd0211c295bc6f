/**
 * Claims and locks taken from their holders, as the functions' DynamoDB
 * writes show them to the fault proxy in front of DynamoDB Local (its
 * `observe` hook), timed by the bench's true clock: whatever the functions'
 * own clocks said.
 *
 * - A pod-sync claim (`claim` on a known-pod record, lib/pod/known/) is taken
 *   over when a write that succeeded replaces it with another claim or drops
 *   it without the holder's token (markTerminating, a delete) before its
 *   holder completed or released it. Early: before the claim's period
 *   (SVK_POD_CLAIM_SECONDS) had passed on the true clock since it was taken.
 * - A lock (lib/lock/) is taken over when a write that succeeded names
 *   another owner while the last one had not released it. Early: less than
 *   the lock's TTL after the last write of the owner it was taken from.
 *
 * It also tells how far the writers' clocks were from the true one: a claim
 * is stamped `until` (the writer's now plus the claim period), a lock record
 * `updatedAt` (the writer's now); {@link TakeoverWatch.stamps} counts those
 * writes ahead, behind, or within {@link ON_TIME_MS} of the true clock.
 */
import type { DynamoRequest } from '../test/support/fault-proxies.ts';

/** One takeover: what was taken, and how long after its holder's last write (true clock). */
export interface Takeover {
  kind: 'claim' | 'lock';
  /** The record's key (`pods#node|ns/name`, `lock#name|lock`). */
  key: string;
  /** Milliseconds from the holder's last write to the takeover. */
  afterMs: number;
  early: boolean;
  /** The holder and the taker: claim owners (request ids) or lock owners. */
  from: string;
  to: string;
  /** How far the holder's and the taker's clocks were from the true one, as their stamps show (ms; absent: no stamp). */
  fromClockMs?: number;
  toClockMs?: number;
}

/** A stamp within this of the true clock counts as on time (the write's own latency, a loaded box). */
export const ON_TIME_MS = 5_000;

/** Claim and lock writes by how their stamp stood against the true clock. */
export interface Stamps {
  ahead: number;
  behind: number;
  onTime: number;
}

type AttributeValue = { S?: string; N?: string; M?: Record<string, AttributeValue> };
type Attributes = Record<string, AttributeValue>;

interface Write {
  operation: 'Put' | 'Update' | 'Delete';
  key: string;
  item?: Attributes;
  updateExpression?: string;
  values?: Attributes;
}

function keyOf(attributes: Attributes | undefined): string | undefined {
  const pk = attributes?.pk?.S;
  const sk = attributes?.sk?.S;
  return pk === undefined || sk === undefined ? undefined : `${pk}|${sk}`;
}

/** The item writes of a request that succeeded (a transaction's all, as it committed whole). */
function writesOf(request: DynamoRequest): Write[] {
  const one = (operation: Write['operation'], body: Record<string, unknown>): Write[] => {
    const item = body.Item as Attributes | undefined;
    const key = keyOf(operation === 'Put' ? item : (body.Key as Attributes | undefined));
    if (key === undefined) return [];
    return [
      {
        operation,
        key,
        ...(item ? { item } : {}),
        ...(typeof body.UpdateExpression === 'string' ? { updateExpression: body.UpdateExpression } : {}),
        ...(body.ExpressionAttributeValues ? { values: body.ExpressionAttributeValues as Attributes } : {}),
      },
    ];
  };
  const { operation, body } = request;
  if (operation === 'PutItem') return one('Put', body);
  if (operation === 'UpdateItem') return one('Update', body);
  if (operation === 'DeleteItem') return one('Delete', body);
  if (operation !== 'TransactWriteItems' || !Array.isArray(body.TransactItems)) return [];
  return (body.TransactItems as Record<string, Record<string, unknown> | undefined>[]).flatMap((op) => [
    ...(op.Put ? one('Put', op.Put) : []),
    ...(op.Update ? one('Update', op.Update) : []),
    ...(op.Delete ? one('Delete', op.Delete) : []),
  ]);
}

interface HeldClaim {
  token: string;
  owner: string;
  at: number;
  clockMs: number | undefined;
}

interface HeldLock {
  owner: string;
  ttlMs: number;
  lastWriteAt: number;
  clockMs: number | undefined;
}

export class TakeoverWatch {
  readonly takeovers: Takeover[] = [];
  /** Claims taken (written) so far. */
  claims = 0;
  /**
   * Claims and lock writes DynamoDB refused (a condition failed): a claimant
   * that lost the race for a record's version, a lock contender that found it held.
   */
  claimsRefused = 0;
  lockWritesRefused = 0;
  readonly stamps: Stamps = { ahead: 0, behind: 0, onTime: 0 };
  readonly #claims = new Map<string, HeldClaim>();
  readonly #locks = new Map<string, HeldLock>();

  constructor(
    private readonly claimMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** For the proxy's `observe`: only requests DynamoDB Local carried out change what is held. */
  observe(request: DynamoRequest, status: number): void {
    if (status === 400) this.#refused(request);
    if (status !== 200) return;
    const at = this.now();
    for (const write of writesOf(request)) {
      if (write.key.startsWith('pods#')) this.#claim(write, at);
      else if (write.key.startsWith('lock#')) this.#lock(write, at);
    }
  }

  #refused(request: DynamoRequest): void {
    for (const write of writesOf(request)) {
      if (write.key.startsWith('pods#') && write.values?.[':claim']) this.claimsRefused++;
      else if (write.key.startsWith('lock#')) this.lockWritesRefused++;
    }
  }

  #claim(write: Write, at: number): void {
    const held = this.#claims.get(write.key);
    const claim = write.values?.[':claim']?.M;
    if (write.operation === 'Update' && claim) {
      const clockMs = this.#stamp(claim.until?.S, at + this.claimMs);
      const next: HeldClaim = { token: claim.token?.S ?? '', owner: claim.owner?.S ?? '', at, clockMs };
      this.claims++;
      if (held) this.#took('claim', write.key, at, this.claimMs, held, { owner: next.owner, clockMs });
      this.#claims.set(write.key, next);
      return;
    }
    const drops = write.operation !== 'Update' || /\bREMOVE\b.*#claim\b/.test(write.updateExpression ?? '');
    if (!held || !drops) return;
    // The holder completes or releases on the condition that its token still holds the claim.
    if (write.values?.[':token']?.S !== held.token)
      this.#took('claim', write.key, at, this.claimMs, held, {
        owner: 'a write without its token',
        clockMs: undefined,
      });
    this.#claims.delete(write.key);
  }

  #lock(write: Write, at: number): void {
    const owner =
      write.operation === 'Put'
        ? write.item?.owner?.S
        : write.operation === 'Update'
          ? write.values?.[':owner']?.S
          : undefined;
    const clockMs = this.#stamp(write.item?.updatedAt?.S ?? write.values?.[':updatedAt']?.S, at);
    const ttlMs = Number(write.item?.ttlMs?.N ?? write.values?.[':ttlMs']?.N ?? 0);
    const held = this.#locks.get(write.key);
    if (held && owner !== undefined && owner !== held.owner)
      this.#took('lock', write.key, at, held.ttlMs, { ...held, at: held.lastWriteAt }, { owner, clockMs });
    if (owner === undefined) this.#locks.delete(write.key);
    else this.#locks.set(write.key, { owner, ttlMs, lastWriteAt: at, clockMs });
  }

  /** Counts the stamp against the true time it stands for; returns how far off it was (undefined: no stamp). */
  #stamp(iso: string | undefined, trueMs: number): number | undefined {
    const stamped = iso === undefined ? Number.NaN : Date.parse(iso);
    if (Number.isNaN(stamped)) return undefined;
    const offset = stamped - trueMs;
    if (offset > ON_TIME_MS) this.stamps.ahead++;
    else if (offset < -ON_TIME_MS) this.stamps.behind++;
    else this.stamps.onTime++;
    return offset;
  }

  #took(
    kind: Takeover['kind'],
    key: string,
    at: number,
    periodMs: number,
    holder: { owner: string; at: number; clockMs: number | undefined },
    taker: { owner: string; clockMs: number | undefined },
  ) {
    // The same invocation claiming again (its own claim never keeps it waiting) takes nothing from anyone.
    if (holder.owner === taker.owner) return;
    const afterMs = at - holder.at;
    this.takeovers.push({
      kind,
      key,
      afterMs,
      early: afterMs < periodMs,
      from: holder.owner,
      to: taker.owner,
      ...(holder.clockMs === undefined ? {} : { fromClockMs: holder.clockMs }),
      ...(taker.clockMs === undefined ? {} : { toClockMs: taker.clockMs }),
    });
  }
}
