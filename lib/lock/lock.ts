import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../clock.ts';
import type { TransactWriteOp } from '../state/dynamodb.ts';

/**
 * The stored state of one lock. `rvn` (record version number) changes on
 * every write, so a contender can tell a live holder (rvn changing) from a
 * dead one (rvn unchanged for a whole TTL) without comparing clocks across
 * machines. `epoch` only ever grows: it increases with each new holder and is
 * the fencing token that leader-only writes are conditioned on.
 */
export interface LockRecord {
  name: string;
  /** The current holder, absent once released. */
  owner?: string;
  epoch: number;
  rvn: string;
  /** The TTL: how long the holder may go without renewing, in ms. */
  ttlMs: number;
  /** Wall-clock time of the last write, for operators only: never used to decide. */
  updatedAt: string;
}

/** Proof of holding a lock, passed to renew, release and fenced writes. */
export interface LockHandle {
  readonly name: string;
  readonly owner: string;
  readonly epoch: number;
  /** Monotonic time by which the holder must have renewed, or stop acting. */
  validUntil: number;
  rvn: string;
  /** Set when this handle came from taking over a stale lock: the owner that stopped renewing it. */
  readonly takenOverFrom?: string;
}

/** The lock was taken over, released by someone else, or deleted: the holder must stop acting. */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  constructor(
    readonly lock: string,
    reason: string,
  ) {
    super(`lock ${lock} lost: ${reason}`);
  }
}

/** A conditional write lost a race with another writer. */
export class LockConflictError extends Error {
  override readonly name = 'LockConflictError';
}

/** A turn's record: everything but the epoch, which the store sets (see {@link turnEpoch}). */
export type LockTurn = Omit<LockRecord, 'epoch' | 'owner'> & { owner: string };

/** What a turn found: the lock taken (the record as written), or held by another owner (the record as it stood). */
export type LockTurnOutcome = { taken: LockRecord } | { heldBy: LockRecord };

/**
 * The rule of a turn ({@link LockManager.advance}): the epoch `owner` takes
 * the lock at, given the record as it stands: the next one when the lock is
 * free, released, or `owner`'s already, whatever its TTL; undefined while
 * another owner holds it.
 */
export function turnEpoch(current: LockRecord | undefined, owner: string): number | undefined {
  if (!current) return 1;
  if (current.owner === undefined || current.owner === owner) return current.epoch + 1;
  return undefined;
}

/**
 * Storage for lock records. Implementations own only the calls; every write is
 * conditional and throws LockConflictError when its condition fails.
 */
export interface LockStore {
  get(name: string): Promise<LockRecord | undefined>;
  /** Creates the record; LockConflictError when it exists. */
  create(record: LockRecord): Promise<void>;
  /** Replaces the record when its rvn is still `expectedRvn`. */
  replaceIfVersion(expectedRvn: string, next: LockRecord): Promise<void>;
  /** Replaces the record when `owner` still holds it at `epoch`. */
  replaceIfHeld(owner: string, epoch: number, next: LockRecord): Promise<void>;
  /**
   * Writes `turn` at the epoch {@link turnEpoch} gives, in one conditional
   * write that also reads: the record as written, or, when another owner
   * holds the lock, the record as it stood (nothing written).
   */
  advance(turn: LockTurn): Promise<LockTurnOutcome>;
}

/**
 * Writes that take effect only while a handle still holds its lock: the
 * fencing check lives with the lock, in one condition (owner and epoch
 * unchanged) that renewal and release use too. The writes are the state
 * table's, since leader-only records live beside the lock.
 */
export interface LockFence {
  /**
   * Writes `ops` atomically with a check that `handle` still holds its lock.
   * @throws LockLostError when it does not: nothing is written.
   */
  fencedWrite(handle: LockHandle, ops: TransactWriteOp[]): Promise<void>;
  /**
   * The same check with nothing to write, just before work that cannot
   * itself be fenced (Kubernetes writes).
   * @throws LockLostError when `handle` no longer holds its lock.
   */
  assertHeld(handle: LockHandle): Promise<void>;
}

export interface LockManagerOptions {
  store: LockStore;
  /** Unique per invocation, e.g. the request id plus a random suffix. */
  owner: string;
  /** How long a record may stay unchanged before contenders take it over. */
  ttlMs: number;
  clock?: Clock;
}

interface Observation {
  rvn: string;
  since: number;
}

/**
 * Acquire, renew and release DynamoDB-backed locks with fencing epochs, after
 * amazon-dynamodb-lock-client: a contender takes a lock over only after it has
 * itself watched the record stay unchanged for the holder's whole TTL,
 * measured on its own monotonic clock. Clock skew between invocations
 * therefore never shortens a TTL.
 */
export class LockManager {
  readonly owner: string;
  private readonly store: LockStore;
  private readonly ttlMs: number;
  private readonly clock: Clock;
  private readonly observed = new Map<string, Observation>();

  constructor(options: LockManagerOptions) {
    this.store = options.store;
    this.owner = options.owner;
    this.ttlMs = options.ttlMs;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * One attempt: returns a handle when the lock was free, released, or stale
   * (unchanged for a whole TTL since this manager first saw that version);
   * undefined while another holder is live.
   */
  async tryAcquire(name: string): Promise<LockHandle | undefined> {
    const current = await this.store.get(name);
    const now = this.clock.monotonic();
    if (!current) return this.write(name, 1, () => this.store.create(this.record(name, 1)));
    if (current.owner === undefined) {
      return this.write(name, current.epoch + 1, (next) => this.store.replaceIfVersion(current.rvn, next));
    }
    // This manager's own earlier write, which happened although its call failed (a timeout on
    // the way back): the lock is ours already, at that epoch; waiting a TTL for ourselves would stall.
    if (current.owner === this.owner) {
      return this.write(name, current.epoch, (next) => this.store.replaceIfVersion(current.rvn, next));
    }
    return this.takeOverIfStale(name, current, now);
  }

  /**
   * A turn of an owner whose turns never overlap, such as the tick chain
   * (one SQS FIFO message group): takes the lock at the next epoch whenever
   * it is free, released or this owner's already, whatever its TTL
   * ({@link turnEpoch}), in one conditional write. So a later turn always
   * fences out an earlier one still running (a tick that outlived its
   * message), and a new sandbox of the same owner never waits for a TTL.
   * While another owner holds the lock, the takeover of {@link tryAcquire}:
   * undefined until this manager has watched the record unchanged for that
   * holder's whole TTL.
   */
  async advance(name: string): Promise<LockHandle | undefined> {
    const started = this.clock.monotonic();
    const { epoch: _epoch, ...record } = this.record(name, 0);
    const turn = { ...record, owner: this.owner };
    let outcome: LockTurnOutcome;
    try {
      outcome = await this.store.advance(turn);
    } catch (err) {
      if (err instanceof LockConflictError) return undefined;
      throw err;
    }
    if ('heldBy' in outcome) return this.takeOverIfStale(name, outcome.heldBy, this.clock.monotonic());
    this.observed.delete(name);
    return {
      name,
      owner: this.owner,
      epoch: outcome.taken.epoch,
      rvn: turn.rvn,
      validUntil: started + this.ttlMs,
    };
  }

  /**
   * Polls until the lock is acquired, `until` (monotonic ms) passes, or the
   * signal aborts; returns undefined when not acquired.
   */
  async acquire(
    name: string,
    options: { pollMs: number; until: number; signal?: AbortSignal },
  ): Promise<LockHandle | undefined> {
    for (;;) {
      if (options.signal?.aborted) return undefined;
      const handle = await this.tryAcquire(name);
      if (handle) return handle;
      const wait = Math.min(options.pollMs, options.until - this.clock.monotonic());
      if (wait <= 0) return undefined;
      try {
        await this.clock.sleep(wait, options.signal);
      } catch {
        return undefined;
      }
    }
  }

  /** Extends the TTL. @throws LockLostError when the lock is no longer ours. */
  async renew(handle: LockHandle): Promise<void> {
    const started = this.clock.monotonic();
    const next = this.record(handle.name, handle.epoch);
    try {
      await this.store.replaceIfHeld(handle.owner, handle.epoch, next);
    } catch (err) {
      if (err instanceof LockConflictError) throw new LockLostError(handle.name, 'taken over or released');
      throw err;
    }
    handle.rvn = next.rvn;
    handle.validUntil = started + this.ttlMs;
  }

  /**
   * Hands the lock over at once: the record stays (so the epoch keeps growing)
   * without an owner. Releasing a lock already lost is not an error.
   */
  async release(handle: LockHandle): Promise<void> {
    const { owner: _owner, ...released } = this.record(handle.name, handle.epoch);
    try {
      await this.store.replaceIfHeld(handle.owner, handle.epoch, released);
    } catch (err) {
      if (!(err instanceof LockConflictError)) throw err;
    }
    handle.validUntil = Number.NEGATIVE_INFINITY;
  }

  /** True while the handle's TTL, counted from its last renewal, has not run out. */
  isValid(handle: LockHandle): boolean {
    return this.clock.monotonic() < handle.validUntil;
  }

  /**
   * Another owner holds `current`: undefined until this manager has watched
   * that version unchanged for its whole TTL (counted from `now`, when first
   * seen), then a takeover at the next epoch.
   */
  private takeOverIfStale(name: string, current: LockRecord, now: number): Promise<LockHandle | undefined> {
    const seen = this.observed.get(name);
    if (!seen || seen.rvn !== current.rvn) {
      this.observed.set(name, { rvn: current.rvn, since: now });
      return Promise.resolve(undefined);
    }
    if (now - seen.since < current.ttlMs) return Promise.resolve(undefined);
    return this.write(
      name,
      current.epoch + 1,
      (next) => this.store.replaceIfVersion(current.rvn, next),
      current.owner,
    );
  }

  private async write(
    name: string,
    epoch: number,
    put: (next: LockRecord) => Promise<void>,
    takenOverFrom?: string,
  ): Promise<LockHandle | undefined> {
    const started = this.clock.monotonic();
    const next = this.record(name, epoch);
    try {
      await put(next);
    } catch (err) {
      if (err instanceof LockConflictError) return undefined;
      throw err;
    }
    this.observed.delete(name);
    return {
      name,
      owner: this.owner,
      epoch,
      rvn: next.rvn,
      validUntil: started + this.ttlMs,
      ...(takenOverFrom === undefined ? {} : { takenOverFrom }),
    };
  }

  private record(name: string, epoch: number): LockRecord {
    return {
      name,
      owner: this.owner,
      epoch,
      rvn: randomUUID(),
      ttlMs: this.ttlMs,
      updatedAt: new Date(this.clock.now()).toISOString(),
    };
  }
}
