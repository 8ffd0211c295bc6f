import { randomUUID } from 'node:crypto';
import type { Dependencies } from '../app/dependencies.ts';
import { type LockHandle, LockLostError, LockManager } from '../lock/lock.ts';
import { RECONCILE_LOCK } from '../lock/lock-names.ts';
import type { Logger } from '../log/logger.ts';
import { InitialBackoff } from './initial-backoff.ts';
import { NewerReleaseRunningError, ReconcileLeader } from './reconcile-leader.ts';

/** What the reconciler did in one tick. */
export type ReconcileTickResult =
  | { role: 'not-newest'; newest: string }
  | { role: 'standby' }
  | {
      role: 'leader';
      epoch: number;
      /**
       * waiting: for the previous leader's requests; lead: the election's work
       * (status transition, first reconcile); periodic: a reconcile; idle: none
       * due; interrupted: the tick's work time ran out first (the next tick goes on).
       */
      did: 'waiting' | 'lead' | 'periodic' | 'idle' | 'interrupted';
    }
  | { role: 'stepped-down'; reason: 'lock-lost' | 'newer-release' };

export interface ReconcileTickOptions {
  /**
   * The lock's TTL: it is renewed every tick, so a few tick periods; a
   * standby (another sandbox, or the continuous function of an older
   * deployment) takes it over after watching it unchanged this long.
   */
  lockTtlMs: number;
}

/**
 * The reconciler driven by ticks instead of a long invocation: the same
 * election on the `reconcile` lock (only the newest running release
 * campaigns) and the same {@link ReconcileLeader}, across the invocations of
 * one warm sandbox. The lock's owner is the sandbox, so its epoch fences the
 * status writes of this sandbox's ticks, which never overlap (one message
 * group). The election's wait for the previous leader's requests is spent
 * between ticks rather than asleep in one; the first reconcile, retried with
 * backoff until a tick's work time is up, goes on in the next tick where its
 * backoff left off (one schedule per election, not one per tick).
 */
export class ReconcileTick {
  readonly #deps: Dependencies;
  readonly #locks: LockManager;
  readonly #ttlMs: number;
  #handle: LockHandle | undefined;
  #electedAt = 0;
  #led = false;
  #backoff: InitialBackoff;
  #reconciledAt = Number.NEGATIVE_INFINITY;

  constructor(deps: Dependencies, options: ReconcileTickOptions) {
    this.#deps = deps;
    this.#ttlMs = options.lockTtlMs;
    this.#backoff = new InitialBackoff(deps.clock);
    this.#locks = new LockManager({
      store: deps.lockStore,
      owner: `tick/${randomUUID().slice(0, 8)}`,
      ttlMs: options.lockTtlMs,
      clock: deps.clock,
    });
  }

  /** One tick's share: hold (or campaign for) the lock, then lead or reconcile when due. */
  async run(stop: AbortSignal, log: Logger): Promise<ReconcileTickResult> {
    const handle = await this.#hold(log);
    if (!handle || 'role' in handle) return handle ?? { role: 'standby' };
    const { clock, config } = this.#deps;
    const leader = new ReconcileLeader({
      deps: this.#deps,
      log,
      owner: this.#locks.owner,
      fence: this.#deps.lockStore,
    });
    const sinceElection = clock.monotonic() - this.#electedAt;
    try {
      if (!this.#led) {
        if (sinceElection < config.reconcile.leaderWaitMs) {
          return { role: 'leader', epoch: handle.epoch, did: 'waiting' };
        }
        await leader.lead(stop, handle, { waitedMs: sinceElection, backoff: this.#backoff });
        this.#led = true;
        this.#reconciledAt = clock.monotonic();
        return { role: 'leader', epoch: handle.epoch, did: 'lead' };
      }
      if (clock.monotonic() - this.#reconciledAt < config.reconcile.intervalMs) {
        return { role: 'leader', epoch: handle.epoch, did: 'idle' };
      }
      this.#reconciledAt = clock.monotonic();
      await leader.periodic(stop, handle);
      return { role: 'leader', epoch: handle.epoch, did: 'periodic' };
    } catch (err) {
      if (err instanceof LockLostError) return this.#stepDown(log, 'lock-lost', err);
      if (err instanceof NewerReleaseRunningError) {
        await this.#locks.release(handle).catch(() => {});
        return this.#stepDown(log, 'newer-release', err);
      }
      if (stop.aborted) return { role: 'leader', epoch: handle.epoch, did: 'interrupted' };
      throw err;
    }
  }

  /** The held lock renewed, a new one taken, undefined while another holds it, or why not to campaign. */
  async #hold(log: Logger): Promise<LockHandle | ReconcileTickResult | undefined> {
    if (this.#handle) {
      // Renewed once a third of its TTL has passed: every other tick or so, not every tick.
      const left = this.#handle.validUntil - this.#deps.clock.monotonic();
      if (left > (this.#ttlMs * 2) / 3) return this.#handle;
      try {
        await this.#locks.renew(this.#handle);
        return this.#handle;
      } catch (err) {
        if (err instanceof LockLostError) return this.#stepDown(log, 'lock-lost', err);
        throw err;
      }
    }
    const leader = new ReconcileLeader({
      deps: this.#deps,
      log,
      owner: this.#locks.owner,
      fence: this.#deps.lockStore,
    });
    const newest = await leader.newerRelease();
    if (newest !== undefined) return { role: 'not-newest', newest };
    const handle = await this.#locks.tryAcquire(RECONCILE_LOCK);
    if (!handle) return undefined;
    if (handle.takenOverFrom !== undefined) {
      log.warn(
        { lock: RECONCILE_LOCK, epoch: handle.epoch, previousOwner: handle.takenOverFrom },
        'lock acquired from a holder that stopped renewing it',
      );
      this.#deps.metrics.lockTakeover(RECONCILE_LOCK);
    } else {
      log.info({ lock: RECONCILE_LOCK, epoch: handle.epoch }, 'lock acquired');
    }
    this.#handle = handle;
    this.#electedAt = this.#deps.clock.monotonic();
    this.#led = false;
    this.#backoff = new InitialBackoff(this.#deps.clock);
    return handle;
  }

  #stepDown(log: Logger, reason: 'lock-lost' | 'newer-release', err: unknown): ReconcileTickResult {
    log.warn({ err, epoch: this.#handle?.epoch }, `reconcile leader stopped: ${reason}`);
    this.#handle = undefined;
    this.#led = false;
    return { role: 'stepped-down', reason };
  }
}
