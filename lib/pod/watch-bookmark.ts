import { type Clock, systemClock } from '../clock.ts';
import { DynamoDbLockStore } from '../lock/dynamodb-lock-store.ts';
import type { LockHandle } from '../lock/lock.ts';
import type { StateTable, StoredItem } from '../state/dynamodb.ts';

/**
 * Where a node's watcher resumes: the resourceVersion up to which every pod
 * event of the node has been published. Lives at pk `watch#<node>`, sk
 * `bookmark`.
 */
export interface WatchBookmark {
  node: string;
  resourceVersion: string;
  /** Fencing epoch of the watcher that wrote it. */
  epoch: number;
  /** Wall-clock time of the write, for operators only. */
  updatedAt: string;
}

export function bookmarkKey(node: string): { pk: string; sk: string } {
  return { pk: `watch#${node}`, sk: 'bookmark' };
}

function fromItem(item: StoredItem): WatchBookmark {
  const { node, resourceVersion, epoch, updatedAt } = item;
  if (typeof node !== 'string' || typeof resourceVersion !== 'string' || typeof epoch !== 'number') {
    throw new Error(`watch bookmark ${item.pk} is malformed`);
  }
  return { node, resourceVersion, epoch, updatedAt: typeof updatedAt === 'string' ? updatedAt : '' };
}

/** The watch bookmarks in the state table. */
export class WatchBookmarkStore {
  readonly #clock: Clock;

  constructor(
    private readonly table: StateTable,
    clock: Clock = systemClock,
  ) {
    this.#clock = clock;
  }

  async get(node: string): Promise<WatchBookmark | undefined> {
    const item = await this.table.get(bookmarkKey(node));
    return item ? fromItem(item) : undefined;
  }

  /**
   * Writes the bookmark only while `handle` holds the node's watch lock, so a
   * deposed watcher can never move it back behind its successor's.
   * @throws LockLostError when the handle no longer holds the lock (nothing written).
   */
  async save(node: string, resourceVersion: string, handle: LockHandle): Promise<WatchBookmark> {
    const bookmark: WatchBookmark = {
      node,
      resourceVersion,
      epoch: handle.epoch,
      updatedAt: new Date(this.#clock.now()).toISOString(),
    };
    await new DynamoDbLockStore(this.table).fencedWrite(handle, [
      { put: { ...bookmarkKey(node), ...bookmark } },
    ]);
    return bookmark;
  }
}
