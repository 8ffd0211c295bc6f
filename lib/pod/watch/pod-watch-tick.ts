import type { Dependencies } from '../../app/dependencies.ts';
import type { EventPublisher } from '../../events/publisher.ts';
import { settledValues } from '../../lock/leader-loop.ts';
import { type LockHandle, LockLostError, LockManager } from '../../lock/lock.ts';
import { podWatchLockName, TICK_CHAIN_OWNER } from '../../lock/lock-names.ts';
import type { Logger } from '../../log/logger.ts';
import { errorMessage } from '../../util/error-message.ts';
import { mapSettledLimit } from '../../util/map-limit.ts';
import { KnownPodStore } from '../known/known-pods.ts';
import { WatchBookmarkStore } from './watch-bookmark.ts';
import { type DrainResult, drainWatch } from './watch-drain.ts';
import { WatchHints } from './watch-hints.ts';
import { relistNode } from './watch-relist.ts';
import {
  type ClusterProbe,
  clusterProbe,
  isResourceVersionAhead,
  type RelistReason,
  watchStart,
} from './watch-resume.ts';

/** An idle drain ends after this long without an event once the watch opened. */
export const IDLE_QUIET_MS = 250;
/** While pods churn, a tick keeps watching until no event came for this long (or its work time is up). */
export const CHURN_QUIET_MS = 2_000;
/**
 * How old a node's resourceVersion may get before a drain waits for the
 * server's bookmark: kube-apiserver keeps at least 75 s of events in its
 * watch cache when it can, and a watch from an older resourceVersion fails
 * with 410 (a relist).
 */
export const BOOKMARK_REFRESH_MS = 50_000;
/**
 * When the server sends no bookmark (no pod changed anywhere since the
 * resourceVersion, so it cannot expire), the next wait for one comes after
 * twice as long, up to this: an idle cluster's drains do not wait 3 s every
 * 50 s. A bookmark, or an event, brings the interval back; should pods start
 * changing elsewhere meanwhile and the resourceVersion expire, the drain
 * gets a 410 and relists.
 */
export const MAX_BOOKMARK_REFRESH_MS = 600_000;
/** A bookmark that moved only by the server's bookmarks is saved at most this often (after events, at once). */
export const BOOKMARK_SAVE_MS = 60_000;

/** What one tick did for one node. */
export interface NodeDrainResult {
  node: string;
  relists: RelistReason[];
  /** Watch requests made. */
  watches: number;
  /** Pod events published (relists included). */
  published: number;
  /** The resourceVersion everything up to which is published. */
  resourceVersion?: string;
  /** The bookmark was saved this tick. */
  saved: boolean;
  /** The epoch of the node's watch lock this tick drained under. */
  epoch?: number;
  /**
   * Another owner (a continuous watcher) holds the node's watch lock: the
   * node was not drained this tick.
   */
  heldElsewhere?: true;
  /** Why the node's drain stopped early (a failed watch or publish); the next tick resumes. */
  failed?: string;
}

/** What a tick gives each node's drain: see {@link PodWatchTick.run}. */
interface TickSignals {
  stop: AbortSignal;
  halt: AbortSignal;
  log: Logger;
}

export interface PodWatchTickOptions {
  /**
   * The TTL the chain writes on the nodes' watch locks: a continuous
   * watcher takes a lock over after watching it unchanged this long, so a
   * few tick periods.
   */
  lockTtlMs: number;
}

interface NodeState {
  /** Everything of the node up to this resourceVersion is published. */
  resourceVersion?: string;
  /** The resourceVersion as last saved, and when (monotonic). */
  saved?: string;
  savedAt: number;
  /** When the resourceVersion last came from the server (a bookmark, an event or a list), monotonic. */
  freshAt: number;
  /** How long after `freshAt` a drain waits for the server's bookmark. */
  refreshMs: number;
  /** What the published events said of each pod (watch-hints.ts), across the sandbox's drains. */
  hints: WatchHints;
}

/**
 * pod-watch driven by ticks: each tick drains every node's watch from where
 * the last one ended (the resourceVersion kept by the warm sandbox; the
 * stored bookmark after a cold start, or a list when there is none),
 * publishes the events, and ends on silence. While events come, it keeps
 * watching until they stop or the tick's work time is up: the long watch
 * only while pods churn. At idle a new pod therefore waits for the next
 * tick, up to one tick period.
 *
 * Each node's drain starts with the tick's turn on the node's watch lock
 * (`pod-watch#<node>`), taken as the chain ({@link TICK_CHAIN_OWNER}): the
 * ticks of a chain never overlap, so a turn always raises the epoch
 * (LockManager.advance), in one write and without waiting for any TTL, and
 * the bookmark is written through the lock's fence as a continuous
 * watcher's is, with the cluster's identity. A tick that outlived its
 * message holds an older epoch than the redelivery that ran meanwhile, and
 * its save is refused. While a continuous watcher (an older deployment's,
 * during a switch of cadence) holds the lock, the node is left to it until
 * it releases the lock or stops renewing it for its TTL.
 *
 * A cold start resumes from the bookmark only on the cluster and
 * etcd history it was taken on (watch-resume.ts), else it relists; a warm
 * sandbox checks again for a resourceVersion ahead of the cluster (an etcd
 * restore) whenever a drain waited for the server's bookmark and got none,
 * the one symptom of it.
 */
export class PodWatchTick {
  readonly #deps: Dependencies;
  readonly #publisher: EventPublisher;
  readonly #nodes = new Map<string, NodeState>();
  readonly #cluster: ClusterProbe;
  readonly #locks: LockManager;
  /** Nodes whose lock another owner held at the last turn (logged once, when first seen). */
  readonly #heldElsewhere = new Set<string>();
  /** The cluster's identity, read at the first cold-start resume of the sandbox. */
  #clusterUid: string | undefined;

  constructor(deps: Dependencies, publisher: EventPublisher, options: PodWatchTickOptions) {
    this.#deps = deps;
    this.#publisher = publisher;
    this.#cluster = clusterProbe(deps.kube.core);
    this.#locks = new LockManager({
      store: deps.lockStore,
      owner: TICK_CHAIN_OWNER,
      ttlMs: options.lockTtlMs,
      clock: deps.clock,
    });
  }

  /** Drains every node's watch; a node whose drain failed is logged (unless stopped) and left out. */
  async run(tick: TickSignals): Promise<NodeDrainResult[]> {
    const { config } = this.#deps;
    const { stop, log } = tick;
    const nodes = config.nodeNames;
    return settledValues(
      await mapSettledLimit(nodes, config.podWatch.maxParallel, (node) =>
        this.#drainNode(node, { ...tick, log: log.child({ node }) }),
      ),
      nodes,
      log,
      stop,
      'pod watch drain failed; the next tick resumes',
    );
  }

  /**
   * `stop` (the tick's work time is up) ends the watch, and what came is
   * still published; `halt` (the invocation ends) stops publishing at once.
   */
  async #drainNode(node: string, tick: TickSignals): Promise<NodeDrainResult> {
    const { log } = tick;
    const result: NodeDrainResult = { node, relists: [], watches: 0, published: 0, saved: false };
    const handle = await this.#turn(node, log);
    if (!handle) return { ...result, heldElsewhere: true };
    result.epoch = handle.epoch;
    const { state, relist } = await this.#state(node, log);
    if (relist) await this.#relist(node, state, relist, tick, result);
    let churning = false;
    while (!tick.stop.aborted && state.resourceVersion !== undefined) {
      const drained = await this.#drainOnce(node, state, churning, tick);
      result.watches++;
      result.published += drained.published;
      if (drained.end === 'expired') {
        log.info(
          { resourceVersion: state.resourceVersion },
          'watch resourceVersion expired (410): relisting',
        );
        await this.#relist(node, state, 'expired', tick, result);
        continue;
      }
      if (drained.end === 'failed') {
        log.warn({ err: drained.error, resourceVersion: state.resourceVersion }, 'pod watch drain failed');
        result.failed = errorMessage(drained.error);
        break;
      }
      // Events came: pods are churning, keep watching until they stop.
      if (drained.published > 0 || (churning && drained.end === 'closed')) {
        churning = true;
        continue;
      }
      if (drained.awaitedInVain && (await this.#isAhead(state))) {
        log.warn(
          { resourceVersion: state.resourceVersion },
          'resourceVersion ahead of the cluster (etcd restored from a backup?): relisting',
        );
        await this.#relist(node, state, 'ahead', tick, result);
      }
      break;
    }
    result.resourceVersion = state.resourceVersion;
    const urgent = result.published > 0 || result.relists.length > 0;
    result.saved = await this.#save(node, state, urgent, handle, log);
    return result;
  }

  /** The tick's turn on the node's watch lock; undefined while another owner holds it. */
  async #turn(node: string, log: Logger): Promise<LockHandle | undefined> {
    const handle = await this.#locks.advance(podWatchLockName(node));
    if (!handle) {
      if (!this.#heldElsewhere.has(node)) {
        log.info(
          'the pod watch lock is held by another watcher: the node is left to it until it hands over or goes stale',
        );
        this.#heldElsewhere.add(node);
      }
      return undefined;
    }
    if (this.#heldElsewhere.delete(node) || handle.takenOverFrom !== undefined) {
      log.info(
        { epoch: handle.epoch, previousOwner: handle.takenOverFrom },
        'pod watch lock taken by the tick chain',
      );
    }
    if (handle.takenOverFrom !== undefined) this.#deps.metrics.lockTakeover(handle.name);
    return handle;
  }

  /** One drain from the node's resourceVersion; moves it, and how fresh it is, by what came. */
  async #drainOnce(
    node: string,
    state: NodeState,
    churning: boolean,
    tick: TickSignals,
  ): Promise<DrainResult & { awaitedInVain: boolean }> {
    const { clock, kube, config } = this.#deps;
    const from = state.resourceVersion ?? '';
    const drained = await drainWatch({
      node,
      kubeContext: kube.context,
      publisher: this.#publisher,
      clock,
      log: tick.log,
      fromResourceVersion: from,
      quietMs: churning ? CHURN_QUIET_MS : IDLE_QUIET_MS,
      awaitBookmark: !churning && clock.monotonic() - state.freshAt >= state.refreshMs,
      flushMs: config.podWatch.flushMs,
      hints: state.hints,
      stop: tick.stop,
      halt: tick.halt,
    });
    // Fresh: the server moved it on, or, asked for its bookmark, sent none: its pods have not
    // changed since this resourceVersion (a 1.20 watch cache sends a bookmark only past it).
    const awaited = drained.end === 'closed' && !churning && !drained.bookmarked;
    const moved = drained.publishedResourceVersion !== from || drained.bookmarked;
    if (moved || awaited) state.freshAt = clock.monotonic();
    if (moved) state.refreshMs = BOOKMARK_REFRESH_MS;
    else if (awaited) state.refreshMs = Math.min(2 * state.refreshMs, MAX_BOOKMARK_REFRESH_MS);
    state.resourceVersion = drained.publishedResourceVersion;
    return { ...drained, awaitedInVain: awaited };
  }

  /** Whether the node's resourceVersion is ahead of the cluster's current one (watch-resume.ts). */
  async #isAhead(state: NodeState): Promise<boolean> {
    const rv = state.resourceVersion;
    return rv !== undefined && isResourceVersionAhead(rv, await this.#cluster.currentResourceVersion());
  }

  async #relist(
    node: string,
    state: NodeState,
    reason: RelistReason,
    tick: TickSignals,
    result: NodeDrainResult,
  ): Promise<void> {
    const listed = await relistNode({
      node,
      reason,
      core: this.#deps.kube.core,
      knownPods: new KnownPodStore(this.#deps.table),
      publisher: this.#publisher,
      log: tick.log,
      pageSize: 500,
      signal: tick.halt,
    });
    result.relists.push(reason);
    result.published += listed.published;
    state.resourceVersion = listed.resourceVersion;
    state.freshAt = this.#deps.clock.monotonic();
    state.refreshMs = BOOKMARK_REFRESH_MS;
    // Changes made while nobody watched are in no event: the hints start afresh.
    state.hints.forget();
  }

  /**
   * The node's state in this sandbox; after a cold start, from the stored
   * bookmark when it is of this cluster and not ahead of it, else a relist
   * and why. A bookmark without the cluster's identity is saved again with it.
   */
  async #state(node: string, log: Logger): Promise<{ state: NodeState; relist?: RelistReason }> {
    const known = this.#nodes.get(node);
    if (known)
      return known.resourceVersion === undefined ? { state: known, relist: 'no-bookmark' } : { state: known };
    const bookmark = await new WatchBookmarkStore(
      this.#deps.table,
      this.#deps.lockStore,
      this.#deps.clock,
    ).get(node);
    const start = await watchStart(bookmark, this.#cluster, log);
    this.#clusterUid = start.clusterUid;
    const rv = start.from;
    const state: NodeState = {
      ...(rv === undefined ? {} : { resourceVersion: rv }),
      ...(start.saved === undefined ? {} : { saved: start.saved }),
      savedAt: this.#deps.clock.monotonic(),
      // Unknown age: the first drain waits for the server's bookmark.
      freshAt: Number.NEGATIVE_INFINITY,
      refreshMs: BOOKMARK_REFRESH_MS,
      hints: new WatchHints(),
    };
    this.#nodes.set(node, state);
    return start.relist === undefined ? { state } : { state, relist: start.relist };
  }

  /** Saves the bookmark when it moved: at once after events or a list, else at most every BOOKMARK_SAVE_MS. */
  async #save(
    node: string,
    state: NodeState,
    urgent: boolean,
    handle: LockHandle,
    log: Logger,
  ): Promise<boolean> {
    const { clock, table, lockStore } = this.#deps;
    const rv = state.resourceVersion;
    if (rv === undefined || rv === state.saved) return false;
    if (!urgent && clock.monotonic() - state.savedAt < BOOKMARK_SAVE_MS) return false;
    try {
      await new WatchBookmarkStore(table, lockStore, clock).save(node, rv, handle, this.#clusterUid);
    } catch (err) {
      if (!(err instanceof LockLostError)) throw err;
      log.warn(
        { resourceVersion: rv, epoch: handle.epoch },
        'a later tick took the pod watch lock: this one is stale, its bookmark not saved',
      );
      return false;
    }
    state.saved = rv;
    state.savedAt = clock.monotonic();
    return true;
  }
}
