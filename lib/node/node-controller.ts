import { PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import type { NodeSettings } from '../config/node-settings.ts';
import { isConflict, isNotFound, type KubeClients } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeProvider, ProviderNodeCondition, ProviderNodeStatus } from '../provider/provider.ts';
import { errorMessage } from '../util/error-message.ts';
import { LeaseApiUnavailableError, type NodeLease } from './node-lease.ts';
import {
  FIELD_MANAGER,
  metadataPatch,
  registrationNode,
  reportFingerprint,
  statusApplyBody,
} from './node-object.ts';

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

/** What one tick did, for logs, metrics and tests. */
export interface TickResult {
  node: string;
  leaseRenewed: boolean;
  statusWritten: boolean;
  pingError?: string;
  /** API requests sent so far through this node's clients (its controller's and its lease's). */
  requests: number;
  /** Steps that failed this tick (logged); the next tick tries again. */
  errors?: string[];
  /**
   * How long the lease went without renewal: from the renewal before this
   * tick's (whoever wrote it) to this tick's, or to now when this tick's
   * failed. Absent when no earlier renewal is known (a lease just created).
   */
  renewalLagMs?: number;
}

const applyOptions = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const mergePatchOptions = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * One virtual node, driven by the heartbeat holder: `start` registers the
 * Node and ensures its Lease; `tick`, every renew interval, pings the
 * provider, renews the Lease, and writes status when it changed or is due.
 * Holds only what one invocation learned; a new invocation starts afresh.
 */
export class NodeController {
  readonly name: string;
  private current: V1Node | undefined;
  private leaseDisabled = false;
  private started = false;
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
   * Labels and taints follow at the next tick; a changed condition is
   * written at once.
   */
  configure(settings: NodeSettings, extraConditions: readonly ProviderNodeCondition[]): void {
    this.settings = settings;
    this.extraConditions = extraConditions;
  }

  /** Registers the Node if missing, ensures its Lease, then writes its status. */
  async start(signal?: AbortSignal): Promise<void> {
    await this.probe(signal);
    try {
      this.current = await this.options.kube.core.readNode({ name: this.name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.register();
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

  /** One heartbeat: ping when due, renew the lease, write status when changed or due. */
  async tick(signal?: AbortSignal): Promise<TickResult> {
    const { clock, log } = this.options;
    const settings = this.settings;
    // A new holder starts each node in its first tick, so that the node's
    // lease is renewed right after its own start, not after every node's.
    if (!this.started) {
      await this.start(signal);
      this.started = true;
    }
    const now = clock.monotonic();
    if (now - this.lastPingAt >= settings.pingIntervalMs) await this.probe(signal);
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
    const previousRenewal = this.options.lease.lastRenewTime();
    const leaseRenewed = this.leaseDisabled
      ? false
      : await attempt(
          'lease renewal',
          () => this.options.lease.renew(signal, now + settings.leaseRenewIntervalMs),
          false,
        );
    let statusWritten = await attempt('registration check', () => this.checkRegistered(), false);
    await attempt('labels and taints update', () => this.syncMetadata(), undefined);
    const changed = this.fingerprint() !== this.lastFingerprint;
    // Without leases the status write is the heartbeat, so it goes out every tick like the renewal
    // it replaces. Measuring one renew interval from the last write instead would skip every other
    // tick: that write ended after the previous tick began, so the gap is always a bit short.
    const due = this.leaseDisabled || now - this.lastStatusAt >= settings.statusIntervalMs;
    if (!statusWritten && (changed || due)) {
      statusWritten = await attempt(
        'status update',
        async () => {
          await this.writeStatus();
          return true;
        },
        false,
      );
    }
    // Due times count from the tick that wrote, not from when the write ended:
    // ticks are exactly one renew interval apart, a write ends a bit later.
    if (statusWritten) this.lastStatusAt = now;
    const renewedAt = leaseRenewed ? this.options.lease.lastRenewTime() : clock.now();
    const renewalLagMs =
      this.leaseDisabled || previousRenewal === undefined || renewedAt === undefined
        ? undefined
        : Math.max(0, renewedAt - previousRenewal);
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
   * Whether the Node still exists, read from the API server's watch cache
   * (resourceVersion 0: no etcd read), so that a deleted Node is registered
   * again within one renew interval. Returns true when it wrote the status.
   */
  private async checkRegistered(): Promise<boolean> {
    const list = await this.options.kube.core.listNode({
      fieldSelector: `metadata.name=${this.name}`,
      resourceVersion: '0',
    });
    const found = list.items[0];
    if (found) {
      if (found.metadata?.uid !== this.current?.metadata?.uid) {
        this.current = found;
        this.options.lease.setNodeUid(found.metadata?.uid);
      }
      return false;
    }
    this.options.log.warn('node was deleted: registering it again');
    await this.register();
    if (this.report) await this.applyStatus(this.report);
    return this.report !== undefined;
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

  /**
   * Brings the Node's labels and taints to the settings in use (a merge patch
   * that leaves other actors' labels and taints alone), conditional on the
   * Node's resourceVersion.
   */
  private async syncMetadata(): Promise<void> {
    for (let attempt = 1; this.current; attempt++) {
      const body = metadataPatch(this.name, this.settings, this.current);
      if (!body) return;
      try {
        this.current = await this.options.kube.core.patchNode(
          { name: this.name, body, fieldManager: FIELD_MANAGER },
          mergePatchOptions,
        );
        this.options.log.info('node labels and taints updated to the config in use');
        return;
      } catch (err) {
        // Someone else changed the Node since we read it: read it again and retry once.
        if (!isConflict(err) || attempt > 1) throw err;
        this.current = await this.options.kube.core.readNode({ name: this.name });
      }
    }
  }

  private async register(): Promise<void> {
    const { kube, log } = this.options;
    const settings = this.settings;
    try {
      this.current = await kube.core.createNode({
        body: registrationNode(this.name, settings),
        fieldManager: FIELD_MANAGER,
      });
      log.info({ uid: this.current.metadata?.uid }, 'registered node');
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Created meanwhile by another actor: use theirs.
      this.current = await kube.core.readNode({ name: this.name });
    }
    this.options.lease.setNodeUid(this.current?.metadata?.uid);
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
      extraConditions: this.extraConditions,
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
