import type { V1Lease } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import { isConflict, isNotFound, type KubeClients } from '../kube/client.ts';
import { MicroTime } from '../kube/micro-time.ts';
import type { Logger } from '../log/logger.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** Immediate, successive retries of one renewal before waiting for the next interval (5, as the kubelet's nodelease controller). */
export const MAX_UPDATE_RETRIES = 5;
/** Ensure-lease backoff: 100 ms doubling up to 7 s, as the kubelet's nodelease controller. */
export const ENSURE_BACKOFF_START_MS = 100;
export const ENSURE_BACKOFF_MAX_MS = 7_000;

/** The Lease API is not served by this cluster: fall back to status-only heartbeats. */
export class LeaseApiUnavailableError extends Error {
  override readonly name = 'LeaseApiUnavailableError';
}

export interface NodeLeaseOptions {
  /** The node's own clients: their request count is the node's. */
  kube: KubeClients;
  nodeName: string;
  durationSeconds: number;
  clock: Clock;
  log: Logger;
  /**
   * Called before a lease that went missing is recreated. The garbage
   * collector deletes the lease when its owner Node is deleted, so the node
   * controller re-registers the Node here, and the new lease points at it.
   */
  beforeRecreate?: () => Promise<void>;
}

/**
 * The lease went missing (deleted with its Node by the garbage collector, or
 * by someone) during a renewal that may not register the Node again: it is
 * left missing until a renewal that may.
 */
export class LeaseMissingError extends Error {
  override readonly name = 'LeaseMissingError';
}

/** Whether `err` says the lease went missing and was left so ({@link NodeLease.renew} with `recreate: false`). */
export function isLeaseMissing(err: unknown): err is LeaseMissingError {
  return err instanceof LeaseMissingError;
}

/**
 * Wall-clock epoch ms of the newest renewal among the Leases of `nodeNames`
 * (the first `sample` of them: one chain renews them all in the same tick),
 * or undefined when none of them has been renewed yet. Requests honour the
 * caller's deadline scope (lib/deadline.ts).
 */
export async function newestLeaseRenewal(
  kube: KubeClients,
  nodeNames: readonly string[],
  sample = 3,
): Promise<number | undefined> {
  const leases = await Promise.all(
    nodeNames.slice(0, sample).map(async (name) => {
      try {
        return await kube.coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE });
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    }),
  );
  const times = leases
    .map((l) => (l?.spec?.renewTime === undefined ? Number.NaN : new Date(l.spec.renewTime).getTime()))
    .filter((t) => !Number.isNaN(t));
  return times.length > 0 ? Math.max(...times) : undefined;
}

/** What a tick's renewal (NodeController.renewLease) did; `previousRenewal`: wall time of the renewal before, if known. */
export interface LeaseRenewal {
  leaseRenewed: boolean;
  previousRenewal: number | undefined;
  /** Requests sent so far through the node's clients. */
  requests: number;
  error?: unknown;
}

/**
 * The node's Lease in kube-node-lease, renewed by the heartbeat holder. Keeps
 * the last lease it wrote, so a renewal is one request; a conflict re-reads,
 * NotFound recreates. The owner reference points at the Node's current uid
 * and is repaired on each renewal until it does.
 */
export class NodeLease {
  private lease: V1Lease | undefined;
  private nodeUid: string | undefined;

  constructor(private readonly options: NodeLeaseOptions) {}

  /**
   * Wall-clock epoch ms of the renewal the lease last carried, as this
   * invocation last read or wrote it (the previous holder's, right after a
   * takeover); undefined before the lease was read.
   */
  lastRenewTime(): number | undefined {
    const renewTime = this.lease?.spec?.renewTime;
    if (renewTime === undefined) return undefined;
    const ms = new Date(renewTime).getTime();
    return Number.isNaN(ms) ? undefined : ms;
  }

  /** Writes its lines to `log` from now on (see NodeController.setLogger). */
  setLogger(log: Logger): void {
    this.options.log = log;
  }

  /** Tells the lease which Node uid to own it; a new uid (re-registration) is written on the next renewal. */
  setNodeUid(uid: string | undefined): void {
    this.nodeUid = uid;
  }

  /**
   * Creates the lease if needed, retrying with exponential backoff until it
   * exists, the signal aborts, or (when given) monotonic time `until` would
   * pass before the next try. Returns true when this call created it. A
   * lease held as last read or written is taken to exist: a renewal finds out
   * when it does not.
   * @throws LeaseApiUnavailableError when the cluster has no Lease API; the
   * last error when `until` passes.
   */
  async ensure(signal?: AbortSignal, until = Number.POSITIVE_INFINITY): Promise<boolean> {
    if (this.lease) return false;
    let sleep = ENSURE_BACKOFF_START_MS;
    for (;;) {
      try {
        return await this.ensureOnce();
      } catch (err) {
        if (err instanceof LeaseApiUnavailableError) throw err;
        signal?.throwIfAborted();
        sleep = Math.min(2 * sleep, ENSURE_BACKOFF_MAX_MS);
        if (this.options.clock.monotonic() + sleep >= until) throw err;
        this.options.log.warn({ err, retryInMs: sleep }, 'failed to ensure node lease exists');
        await this.options.clock.sleep(sleep, signal);
      }
    }
  }

  /**
   * Renews the lease: ensures it (backing off no later than `until`), then up
   * to MAX_UPDATE_RETRIES immediate updates. Returns true on success; false
   * means the next interval retries. A lease that went missing is recreated
   * after `beforeRecreate` registered the Node again, unless `recreate` is
   * false: then it throws {@link LeaseMissingError} and forgets the lease,
   * for a caller that may not register a Node (degraded, or refused by the
   * release gate).
   */
  async renew(signal?: AbortSignal, until?: number, options: { recreate?: boolean } = {}): Promise<boolean> {
    if (!this.lease && (await this.ensure(signal, until))) return true;
    for (let attempt = 0; attempt < MAX_UPDATE_RETRIES; attempt++) {
      signal?.throwIfAborted();
      try {
        await this.update(this.lease);
        return true;
      } catch (err) {
        // The renewal carries the lease's uid, a precondition: a lease deleted since (by a user, or
        // by the garbage collector after its Node went) answers Conflict, as a stale copy does. The
        // re-read tells them apart. Without the uid the API server would create the lease again
        // from the PUT (leases allow create on update), owned by the deleted Node, and the garbage
        // collector would delete it again: the Node would never be registered again.
        if (isConflict(err)) this.lease = await this.read();
        if (isNotFound(err) || (isConflict(err) && !this.lease)) {
          if (options.recreate === false) {
            this.lease = undefined;
            this.nodeUid = undefined;
            throw new LeaseMissingError(`lease ${this.options.nodeName} went missing`);
          }
          if (await this.recreate(signal, until)) return true;
          continue;
        }
        if (isConflict(err)) continue;
        this.options.log.warn({ err, attempt: attempt + 1 }, 'failed to update node lease');
      }
    }
    this.options.log.error(
      { attempts: MAX_UPDATE_RETRIES },
      'failed to update node lease; retrying at the next renew interval',
    );
    return false;
  }

  /**
   * The lease went missing: registers the Node again (beforeRecreate), then
   * creates the lease owned by the Node's uid as it is now (read here when
   * beforeRecreate did not tell it). True when this call created it.
   */
  private async recreate(signal: AbortSignal | undefined, until: number | undefined): Promise<boolean> {
    this.lease = undefined;
    this.nodeUid = undefined;
    await this.options.beforeRecreate?.();
    return this.ensure(signal, until);
  }

  private async ensureOnce(): Promise<boolean> {
    const { kube, nodeName } = this.options;
    this.lease = await this.read();
    if (this.lease) return false;
    try {
      this.lease = await kube.coordination.createNamespacedLease({
        namespace: NODE_LEASE_NAMESPACE,
        body: await this.desired(undefined),
      });
      return true;
    } catch (err) {
      // NotFound on create: the namespace or the whole coordination API is missing.
      if (isNotFound(err))
        throw new LeaseApiUnavailableError(`cannot create lease ${nodeName}: ${String(err)}`);
      throw err;
    }
  }

  /** Replaces `current` (as last read or written, its uid and resourceVersion the preconditions) with a renewal. */
  private async update(current: V1Lease | undefined): Promise<void> {
    const { kube, nodeName } = this.options;
    if (!current?.metadata?.uid) throw new Error(`no stored copy of lease ${nodeName} to renew`);
    this.lease = await kube.coordination.replaceNamespacedLease({
      name: nodeName,
      namespace: NODE_LEASE_NAMESPACE,
      body: await this.desired(current),
    });
  }

  /** The lease as stored, or undefined when it does not exist. */
  private async read(): Promise<V1Lease | undefined> {
    const { kube, nodeName } = this.options;
    try {
      return await kube.coordination.readNamespacedLease({ name: nodeName, namespace: NODE_LEASE_NAMESPACE });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async desired(base: V1Lease | undefined): Promise<V1Lease> {
    const { nodeName, durationSeconds, clock } = this.options;
    const lease: V1Lease = structuredClone(
      base ?? {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: nodeName, namespace: NODE_LEASE_NAMESPACE },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: durationSeconds },
      },
    );
    lease.spec = { ...lease.spec, renewTime: new MicroTime(clock.now()) };
    const owner = lease.metadata?.ownerReferences?.[0];
    if (!owner || owner.uid !== this.nodeUid) {
      // Owned by another uid than the one known here: the Node was registered again, perhaps by
      // another writer (the reconciler), so the Node itself says which uid owns the lease. Writing
      // the uid known here would hand the lease to a deleted owner, and the garbage collector.
      const uid = owner !== undefined || this.nodeUid === undefined ? await this.readNodeUid() : this.nodeUid;
      if (uid) {
        this.nodeUid = uid;
        lease.metadata = {
          ...lease.metadata,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid }],
        };
      }
    }
    return lease;
  }

  private async readNodeUid(): Promise<string | undefined> {
    try {
      const node = await this.options.kube.core.readNode({ name: this.options.nodeName });
      return node.metadata?.uid;
    } catch (err) {
      this.options.log.warn(
        { err },
        'cannot read node for the lease owner reference; retrying at the next renewal',
      );
      return undefined;
    }
  }
}
