import type { LockFence, LockHandle } from '../lock/lock.ts';
import type { StateTable, StoredItem } from '../state/dynamodb.ts';
import { isRelease } from './release.ts';

/**
 * The reconciler status (KubernetesReconcilerStatus in Monogon's reconciler): what the
 * last reconciler did to the cluster's state, and which releases may act on
 * that state. Written only by the reconcile leader, fenced on its lock.
 */
export interface ReconcilerStatus {
  /** working: a reconcile towards `version` is under way; done: it completed. */
  state: 'working' | 'done';
  /** The release of the reconciler that produced (or is producing) the state. */
  version: string;
  /** Functions of a lower release must not act on this state. */
  minCompatibleRelease: string;
}

/** The stored status, with what operators want to see besides. */
export interface StoredReconcilerStatus extends ReconcilerStatus {
  /** Fencing epoch of the reconcile lock the writer held. */
  epoch: number;
  /** Wall-clock ISO time of the write, for operators only. */
  updatedAt: string;
}

/** pk/sk of the one status item of a deployment (the table is per deployment). */
export const STATUS_KEY = { pk: 'reconciler', sk: 'status' } as const;

export function sameStatus(a: ReconcilerStatus | undefined, b: ReconcilerStatus | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.state === b.state &&
    a.version === b.version &&
    a.minCompatibleRelease === b.minCompatibleRelease
  );
}

/** The status item is unreadable (written by hand, or by a release that stored something else). */
export class MalformedStatusError extends Error {
  override readonly name = 'MalformedStatusError';
}

function fromItem(item: StoredItem): StoredReconcilerStatus {
  const { state, version, minCompatibleRelease, epoch, updatedAt } = item;
  if (
    (state !== 'working' && state !== 'done') ||
    typeof version !== 'string' ||
    !isRelease(version) ||
    typeof minCompatibleRelease !== 'string' ||
    !isRelease(minCompatibleRelease)
  ) {
    throw new MalformedStatusError(
      `reconciler status ${JSON.stringify({ state, version, minCompatibleRelease })} is malformed: ` +
        'expected state working|done and releases like 1.2.3',
    );
  }
  return {
    state,
    version,
    minCompatibleRelease,
    epoch: typeof epoch === 'number' ? epoch : 0,
    updatedAt: typeof updatedAt === 'string' ? updatedAt : '',
  };
}

/** The status item in the state table. */
export class ReconcilerStatusStore {
  constructor(
    private readonly table: StateTable,
    /** The reconcile lock's fence: the status is written through it. */
    private readonly fence: LockFence,
  ) {}

  /** The current status, undefined before the first reconcile completed. @throws MalformedStatusError */
  async get(): Promise<StoredReconcilerStatus | undefined> {
    const item = await this.table.get(STATUS_KEY);
    return item ? fromItem(item) : undefined;
  }

  /**
   * Writes `status` in one transaction with a check that `handle` still holds
   * the reconcile lock at its epoch.
   * @throws LockLostError when it does not: nothing is written, and the caller must stop acting.
   */
  async write(handle: LockHandle, status: ReconcilerStatus, now: number): Promise<void> {
    const item: StoredItem = {
      ...STATUS_KEY,
      state: status.state,
      version: status.version,
      minCompatibleRelease: status.minCompatibleRelease,
      epoch: handle.epoch,
      updatedAt: new Date(now).toISOString(),
    };
    await this.fence.fencedWrite(handle, [{ put: item }]);
  }
}
