import { type Clock, systemClock } from '../../clock.ts';
import type { LockFence, LockHandle } from '../../lock/lock.ts';
import { isConditionFailed, type StateTable, type StoredItem } from '../../state/dynamodb.ts';

/**
 * Where a node's watcher resumes: the resourceVersion up to which every pod
 * event of the node has been published. Lives at pk `watch#<node>`, sk
 * `bookmark`.
 */
export interface WatchBookmark {
  node: string;
  resourceVersion: string;
  /** Fencing epoch of the watcher that wrote it (0 when a tick wrote it). */
  epoch: number;
  /** The fencing token of the tick that wrote it (lib/tick/tick-slot.ts), when a tick did. */
  tickFence?: number;
  /**
   * The cluster the resourceVersion belongs to: the uid of its kube-system
   * namespace (see watch-resume.ts). Absent in bookmarks written before it
   * was recorded.
   */
  clusterUid?: string;
  /** Wall-clock time of the write, for operators only. */
  updatedAt: string;
}

export function bookmarkKey(node: string): { pk: string; sk: string } {
  return { pk: `watch#${node}`, sk: 'bookmark' };
}

function fromItem(item: StoredItem): WatchBookmark {
  const { node, resourceVersion, epoch, updatedAt, tickFence, clusterUid } = item;
  if (typeof node !== 'string' || typeof resourceVersion !== 'string' || typeof epoch !== 'number') {
    throw new Error(`watch bookmark ${item.pk} is malformed`);
  }
  return {
    node,
    resourceVersion,
    epoch,
    updatedAt: typeof updatedAt === 'string' ? updatedAt : '',
    ...(typeof tickFence === 'number' ? { tickFence } : {}),
    ...(typeof clusterUid === 'string' ? { clusterUid } : {}),
  };
}

/** The watch bookmarks in the state table. */
export class WatchBookmarkStore {
  readonly #clock: Clock;

  constructor(
    private readonly table: StateTable,
    /** The watch locks' fence: a continuous watcher's bookmark is written through it. */
    private readonly fence: LockFence,
    clock: Clock = systemClock,
  ) {
    this.#clock = clock;
  }

  async get(node: string): Promise<WatchBookmark | undefined> {
    const item = await this.table.get(bookmarkKey(node));
    return item ? fromItem(item) : undefined;
  }

  /**
   * Writes the bookmark, with the cluster it belongs to, only while `handle`
   * holds the node's watch lock, so a deposed watcher can never move it back
   * behind its successor's.
   * @throws LockLostError when the handle no longer holds the lock (nothing written).
   */
  async save(
    node: string,
    resourceVersion: string,
    handle: LockHandle,
    clusterUid?: string,
  ): Promise<WatchBookmark> {
    const bookmark: WatchBookmark = {
      node,
      resourceVersion,
      epoch: handle.epoch,
      updatedAt: new Date(this.#clock.now()).toISOString(),
      ...(clusterUid !== undefined ? { clusterUid } : {}),
    };
    await this.fence.fencedWrite(handle, [{ put: { ...bookmarkKey(node), ...bookmark } }]);
    return bookmark;
  }

  /**
   * Writes the bookmark of a tick (no lock: ticks never overlap), unless a
   * tick with a higher fencing token wrote it already, so a tick that
   * outlived its message's visibility timeout cannot move it back behind its
   * successor's. A continuous watcher's bookmark (no token) is overwritten.
   * `clusterUid` is the cluster the resourceVersion belongs to. Returns
   * false when a later tick's bookmark stands.
   */
  async saveForTick(
    node: string,
    resourceVersion: string,
    fence: number,
    clusterUid?: string,
  ): Promise<boolean> {
    const bookmark: WatchBookmark = {
      node,
      resourceVersion,
      epoch: 0,
      tickFence: fence,
      updatedAt: new Date(this.#clock.now()).toISOString(),
      ...(clusterUid !== undefined ? { clusterUid } : {}),
    };
    try {
      await this.table.put(
        { ...bookmarkKey(node), ...bookmark },
        {
          condition: {
            expression: 'attribute_not_exists(#fence) OR #fence <= :fence',
            names: { '#fence': 'tickFence' },
            values: { ':fence': fence },
          },
        },
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }
}
