import type { V1Node } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { isNotFound, type KubeClients } from '../kube/client.ts';
import { PatchStrategy, setHeaderOptions } from '../kube/patch.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeProvider, ProviderNodeCondition, ProviderNodeStatus } from '../provider/provider.ts';
import { errorMessage } from '../util/error-message.ts';
import {
  isLeaseMissing,
  LeaseApiUnavailableError,
  LeaseMissingError,
  type LeaseRenewal,
  type NodeLease,
} from './node-lease.ts';
import { FIELD_MANAGER, reportFingerprint, statusApplyBody } from './node-object.ts';
import { registerNode, syncNodeMetadata } from './node-writes.ts';
import type { NodeRoundResult } from './round-result.ts';
import {
  markStateStoreUnavailable,
  STATE_STORE_CONDITION,
  stateStoreAvailable,
} from './state-store-condition.ts';

export interface NodeControllerOptions {
  name: string;
  settings: NodeSettings;
  provider: NodeProvider;
  /** The node's own clients (shared with its lease): their request count is the node's. */
  kube: KubeClients;
  lease: NodeLease;
  clock: Clock;
  log: Logger;
}

export type { NodeRoundResult } from './round-result.ts';

const applyOptions = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/**
 * One virtual node, driven by the heartbeat holder: `start` registers the
 * Node and ensures its Lease; `round`, every renew interval, pings the
 * provider, renews the Lease, and writes status when it changed or is due.
 * Holds only what one invocation learned; a new invocation starts afresh.
 */
export class NodeController {
  readonly name: string;
  private current: V1Node | undefined;
  private leaseDisabled = false;
  /** A renewal failed or came late since the last status write: the node controller may have marked Ready Unknown. */
  private statusOwed = false;
  /** The lease went missing in a renewal that could not register the Node: it is registered again by the next that can. */
  private nodeGone = false;
  private started = false;
  /** Monotonic time this controller's renewal found no Node; undefined once read or registered. */
  private missingAt: number | undefined;
  private lastStatusAt = Number.NEGATIVE_INFINITY;
  private lastPingAt = Number.NEGATIVE_INFINITY;
  private lastFingerprint: string | undefined;
  private pingError: string | undefined;
  private report: ProviderNodeStatus | undefined;
  private settings: NodeSettings;
  private extraConditions: readonly ProviderNodeCondition[] = [];

  constructor(private readonly options: NodeControllerOptions) {
    this.name = options.name;
    this.settings = options.settings;
  }

  /**
   * The node settings in use from now on (local or assigned config) and the
   * conditions the controller reports besides the provider's (ConfigOK).
   * Labels and taints follow at the next round; a changed condition is
   * written at once.
   */
  configure(settings: NodeSettings, extraConditions: readonly ProviderNodeCondition[]): void {
    this.settings = settings;
    this.extraConditions = extraConditions;
  }

  /**
   * Writes its lines (and its lease's) to `log` from now on: a warm sandbox
   * keeps a controller across invocations, and each line carries the request
   * id of the invocation it belongs to.
   */
  setLogger(log: Logger): void {
    this.options.log = log;
    this.options.lease.setLogger(log);
  }

  /** Registers the Node if missing, ensures its Lease, writes its status; reads nothing this round's renewal did. */
  async start(signal?: AbortSignal): Promise<void> {
    await this.probe(signal);
    if (this.missingRecently()) await this.register();
    else if (!this.current) {
      try {
        this.current = await this.options.kube.core.readNode({ name: this.name });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await this.register();
      }
    }
    // The lease before the status: a node must not report Ready without one.
    this.options.lease.setNodeUid(this.current?.metadata?.uid);
    try {
      await this.options.lease.ensure(
        signal,
        this.options.clock.monotonic() + this.settings.leaseRenewIntervalMs,
      );
    } catch (err) {
      if (!(err instanceof LeaseApiUnavailableError)) throw err;
      this.options.log.warn({ err }, 'node leases not supported: falling back to node status heartbeats');
      this.leaseDisabled = true;
    }
    await this.writeStatus();
  }

  /**
   * One heartbeat round: renew the lease (unless `renewed` says this round did
   * already, see {@link renewLease}), ping when due, write status when
   * changed or due.
   */
  async round(signal?: AbortSignal, renewed?: LeaseRenewal): Promise<NodeRoundResult> {
    const { clock, log } = this.options;
    const settings = this.settings;
    // A new holder starts each node in its first round, so that the node's
    // lease is renewed right after its own start, not after every node's.
    if (!this.started) {
      await this.start(signal);
      this.started = true;
    }
    const now = clock.monotonic();
    const errors: string[] = [];
    // One failing step (API server down, a timeout) is logged and leaves the others to run.
    const attempt = async <T>(what: string, step: () => Promise<T>, fallback: T): Promise<T> => {
      try {
        return await step();
      } catch (err) {
        signal?.throwIfAborted();
        log.warn({ err }, `${what} failed`);
        errors.push(what);
        return fallback;
      }
    };
    // The lease first: it is what keeps the node Ready. Backing off on it must
    // not hold up the next round of the other nodes.
    // A renewal that could not register (before the gate said this round may) is done again, as it may now.
    const usable = renewed && !isLeaseMissing(renewed.error) ? renewed : undefined;
    const { leaseRenewed, previousRenewal, error } = usable ?? (await this.renewLease(signal));
    if (error !== undefined) {
      log.warn({ err: error }, 'lease renewal failed');
      errors.push('lease renewal');
    }
    const renewalLagMs = this.renewalLag(leaseRenewed, previousRenewal);
    // The node lifecycle controller marks Ready Unknown after its grace (40 s) without renewal; only a
    // status write sets it back. No Node is read per round (a kubelet compares it every 10 s), so a failed
    // renewal or a gap of two intervals owes the status to the first round whose renewal gets through.
    if (error !== undefined || (renewalLagMs ?? 0) > 2 * settings.leaseRenewIntervalMs)
      this.statusOwed = true;
    // The ping after the renewal: a slow provider must not delay what keeps the node Ready.
    if (now - this.lastPingAt >= settings.pingIntervalMs) await this.probe(signal);
    // No read of the Node per round: the lease's owner reference makes the garbage collector
    // delete the lease with its Node, so the next renewal finds it gone and registers the Node again.
    let statusWritten = false;
    await attempt('labels and taints update', () => this.syncMetadata(), undefined);
    const changed = this.fingerprint() !== this.lastFingerprint;
    // Without leases the status write is the heartbeat, so it goes out every round like the renewal
    // it replaces. Measuring one renew interval from the last write instead would skip every other
    // round: that write ended after the previous round began, so the gap is always a bit short.
    const due = this.leaseDisabled || now - this.lastStatusAt >= settings.statusIntervalMs;
    const owed = this.statusOwed && leaseRenewed;
    if (!statusWritten && (changed || due || owed)) {
      statusWritten = await attempt(
        'status update',
        async () => {
          await this.writeStatus();
          return true;
        },
        false,
      );
    }
    // Due times count from the round that wrote, not from when the write ended:
    // rounds are exactly one renew interval apart, a write ends a bit later.
    if (statusWritten) {
      this.lastStatusAt = now;
      this.statusOwed = false;
    }
    return {
      node: this.name,
      leaseRenewed,
      statusWritten,
      requests: this.options.kube.requests(),
      ...(this.pingError ? { pingError: this.pingError } : {}),
      ...(errors.length > 0 ? { errors } : {}),
      ...(renewalLagMs === undefined ? {} : { renewalLagMs }),
    };
  }

  /**
   * Renews the lease alone, the first thing a round does, before the state
   * store is asked anything: what keeps the node Ready. A Node this
   * controller has not read yet is read first (the lease names its uid); one
   * that does not exist is left so, and not read again for half a lease:
   * with a thousand new nodes, those reads would fill every round before the
   * registrations (start) got their turn. A lease that went missing (its Node
   * deleted) registers the Node again only with `register` (default true);
   * without, the failure is {@link LeaseMissingError} and the Node is read
   * afresh next time, so nothing is created for a Node that is gone. A
   * failure is returned; only an abort throws.
   */
  async renewLease(signal?: AbortSignal, options: { register?: boolean } = {}): Promise<LeaseRenewal> {
    const { clock, kube, lease } = this.options;
    const previousRenewal = lease.lastRenewTime();
    const outcome = (leaseRenewed: boolean, error?: unknown): LeaseRenewal => ({
      leaseRenewed,
      previousRenewal,
      requests: kube.requests(),
      ...(error === undefined ? {} : { error }),
    });
    if (this.leaseDisabled) return outcome(false);
    const register = options.register !== false;
    try {
      if (this.nodeGone && register) {
        await this.ensureRegistered();
        this.nodeGone = false;
      }
      if (!this.current || this.nodeGone) {
        if (this.missingRecently()) return outcome(false);
        try {
          this.current = await kube.core.readNode({ name: this.name });
        } catch (err) {
          if (!isNotFound(err)) throw err;
          if (!this.nodeGone) {
            this.missingAt = clock.monotonic();
            return outcome(false);
          }
          return outcome(false, new LeaseMissingError(`node ${this.name} is gone`));
        }
        // Registered again by someone else (the release in charge, after a refused round's renewal).
        this.nodeGone = false;
        lease.setNodeUid(this.current.metadata?.uid);
      }
      const until = clock.monotonic() + this.settings.leaseRenewIntervalMs;
      return outcome(await lease.renew(signal, until, { recreate: register }));
    } catch (err) {
      signal?.throwIfAborted();
      if (isLeaseMissing(err)) this.nodeGone = true;
      return outcome(false, err);
    }
  }

  /**
   * Keeps the node alive while the lock store cannot be reached: renews its
   * Lease and marks it {@link STATE_STORE_CONDITION}, nothing else (no ping,
   * no status report, no labels, no registration: a Node that does not
   * exist, or was deleted meanwhile, is left so until the store answers).
   * Renewing a Lease that another invocation renews too is harmless, so this
   * needs no lock. Throws what the API server throws. `renewed`: the round's
   * renewal ({@link renewLease} without `register`), when done already.
   */
  async keepAlive(
    signal: AbortSignal | undefined,
    unavailableSince: Date,
    renewed?: LeaseRenewal,
  ): Promise<NodeRoundResult> {
    const { clock, kube } = this.options;
    const { leaseRenewed, previousRenewal, error } =
      renewed ?? (await this.renewLease(signal, { register: false }));
    if (error !== undefined && !isLeaseMissing(error)) throw error;
    if (!this.current || this.nodeGone) {
      return { node: this.name, leaseRenewed: false, statusWritten: false, requests: kube.requests() };
    }
    const marked = this.current.status?.conditions?.some(
      (c) => c.type === STATE_STORE_CONDITION && c.status === 'True',
    );
    if (!marked) {
      this.current = await markStateStoreUnavailable(
        kube.core,
        this.name,
        unavailableSince,
        new Date(clock.now()),
        this.current,
      );
    }
    // Back to the lock, the full status goes out at once (it says the store answers again).
    this.lastFingerprint = undefined;
    const renewalLagMs = this.renewalLag(leaseRenewed, previousRenewal);
    return {
      node: this.name,
      leaseRenewed,
      statusWritten: !marked,
      requests: kube.requests(),
      ...(renewalLagMs === undefined ? {} : { renewalLagMs }),
    };
  }

  private missingRecently(): boolean {
    const since = this.missingAt === undefined ? undefined : this.options.clock.monotonic() - this.missingAt;
    return !this.current && since !== undefined && since < this.settings.leaseDurationSeconds * 500;
  }

  private renewalLag(leaseRenewed: boolean, previousRenewal: number | undefined): number | undefined {
    const renewedAt = leaseRenewed ? this.options.lease.lastRenewTime() : this.options.clock.now();
    return this.leaseDisabled || previousRenewal === undefined || renewedAt === undefined
      ? undefined
      : Math.max(0, renewedAt - previousRenewal);
  }

  /**
   * Makes sure the Node exists, registering it again when it was deleted, and
   * points the lease at its uid. Called when the lease went missing.
   */
  async ensureRegistered(): Promise<void> {
    try {
      this.current = await this.options.kube.core.readNode({ name: this.name });
      this.options.lease.setNodeUid(this.current.metadata?.uid);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.options.log.warn('node was deleted: registering it again');
      await this.register();
      if (this.report) await this.applyStatus(this.report);
    }
  }

  /** Asks the provider for its ping and node report; a failing ping is remembered, not thrown. */
  private async probe(signal?: AbortSignal): Promise<void> {
    const { provider, clock, log } = this.options;
    this.lastPingAt = clock.monotonic();
    try {
      await provider.ping(this.name, signal);
      if (this.pingError) log.info('provider ping recovered');
      this.pingError = undefined;
    } catch (err) {
      const message = errorMessage(err);
      if (message !== this.pingError) log.warn({ err }, 'provider ping failed: node turns Ready=False');
      this.pingError = message;
    }
    try {
      this.report = await provider.nodeStatus(this.name, signal);
    } catch (err) {
      // Keep the last report; a provider that cannot report is also not ready.
      const message = errorMessage(err);
      this.pingError ??= `node status unavailable: ${message}`;
      log.warn({ err }, 'provider node status failed');
    }
  }

  private fingerprint(): string | undefined {
    return this.report ? reportFingerprint(this.report, this.pingError, this.extraConditions) : undefined;
  }

  private async syncMetadata(): Promise<void> {
    if (this.current) {
      this.current = await syncNodeMetadata(this.options, this.settings, this.current, this.report);
    }
  }

  private async register(): Promise<void> {
    this.current = await registerNode(this.options, this.name, this.settings, this.report);
    this.options.lease.setNodeUid(this.current.metadata?.uid);
  }

  /**
   * Server-side apply of the status with our field manager: other writers'
   * conditions survive, conditions we stop reporting go. When the Node was
   * deleted meanwhile, it is registered again and the write retried.
   */
  private async writeStatus(): Promise<void> {
    if (!this.report) throw new Error(`no provider report for node ${this.name}`);
    try {
      await this.applyStatus(this.report);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.options.log.warn('node was deleted: registering it again');
      this.current = undefined;
      await this.register();
      await this.applyStatus(this.report);
    }
  }

  private async applyStatus(report: ProviderNodeStatus): Promise<void> {
    const { kube, clock } = this.options;
    const body = statusApplyBody({
      name: this.name,
      settings: this.settings,
      report,
      // Whoever writes the full status holds its lock, so the state table answers.
      extraConditions: [...this.extraConditions, stateStoreAvailable()],
      ...(this.pingError ? { pingError: this.pingError } : {}),
      ...(this.current ? { current: this.current } : {}),
      now: new Date(clock.now()),
    });
    this.current = await kube.core.patchNodeStatus(
      { name: this.name, body, fieldManager: FIELD_MANAGER, force: true },
      applyOptions,
    );
    this.lastStatusAt = clock.monotonic();
    this.lastFingerprint = reportFingerprint(report, this.pingError, this.extraConditions);
  }
}
