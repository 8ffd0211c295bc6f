import { type Clock, systemClock } from '../../clock.ts';
import type { LockFence, LockHandle } from '../../lock/lock.ts';
import type { StateTable, StoredItem } from '../../state/dynamodb.ts';

/**
 * Where a node's watcher resumes: the resourceVersion up to which every pod
 * event of the node has been published. Lives at pk `watch#<node>`, sk
 * `bookmark`.
 */
export interface WatchBookmark {
  node: string;
  resourceVersion: string;
  /**
   * The epoch of the node's watch lock its writer held: a continuous
   * watcher, or a tick of the chain. Items written before the ticks took
   * the lock have 0 here and a `tickFence` attribute, which is not read.
   */
  epoch: number;
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
  const { node, resourceVersion, epoch, updatedAt, clusterUid } = item;
  if (typeof node !== 'string' || typeof resourceVersion !== 'string' || typeof epoch !== 'number') {
    throw new Error(`watch bookmark ${item.pk} is malformed`);
  }
  return {
    node,
    resourceVersion,
    epoch,
    updatedAt: typeof updatedAt === 'string' ? updatedAt : '',
    ...(typeof clusterUid === 'string' ? { clusterUid } : {}),
  };
}

/** The watch bookmarks in the state table. */
export class WatchBookmarkStore {
  readonly #clock: Clock;

  constructor(
    private readonly table: StateTable,
    /** The watch locks' fence: every bookmark is written through it. */
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
   * holds the node's watch lock, so a deposed watcher, or a tick that
   * outlived its message, can never move it back behind its successor's.
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
}
