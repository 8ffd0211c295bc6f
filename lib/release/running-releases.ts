import { isConditionFailed, type StateTable } from '../state/dynamodb.ts';
import { isRelease, releaseLessThan } from './release.ts';

/**
 * Which releases still run (the watchNodes of Monogon's reconciler, for
 * functions instead of nodes): every function records its release when it
 * starts, with an expiry longer than the longest invocation, so a release
 * whose code is no longer invoked drops out once its last record expires.
 * One item per release at pk `releases`, sk `<release>`; `expiresAt` (epoch
 * seconds) also lets DynamoDB's TTL remove it, but readers compare it with
 * the clock themselves.
 */
export const RELEASES_PARTITION = 'releases';

export interface RunningRelease {
  release: string;
  /** Epoch ms after which the release no longer counts as running. */
  expiresAtMs: number;
  /** The function that recorded it last, for operators. */
  lastFunction: string;
}

/** The lowest and highest release running now. */
export interface ReleaseRange {
  min: string;
  max: string;
  releases: RunningRelease[];
}

export class RunningReleaseStore {
  constructor(private readonly table: StateTable) {}

  /**
   * Records that `release` runs until `now + ttlMs` at least. Never shortens
   * an expiry another invocation recorded.
   */
  async record(release: string, functionName: string, now: number, ttlMs: number): Promise<void> {
    const expiresAtMs = now + ttlMs;
    try {
      await this.table.update(
        { pk: RELEASES_PARTITION, sk: release },
        {
          expression: 'SET #release = :release, #exp = :exp, #ms = :ms, #fn = :fn',
          names: { '#release': 'release', '#exp': 'expiresAt', '#ms': 'expiresAtMs', '#fn': 'lastFunction' },
          values: {
            ':release': release,
            ':exp': Math.ceil(expiresAtMs / 1000),
            ':ms': expiresAtMs,
            ':fn': functionName,
          },
        },
        {
          condition: {
            expression: 'attribute_not_exists(#ms) OR #ms < :ms',
            names: { '#ms': 'expiresAtMs' },
            values: { ':ms': expiresAtMs },
          },
        },
      );
    } catch (err) {
      // A later expiry is already recorded: nothing to do.
      if (!isConditionFailed(err)) throw err;
    }
  }

  /** Releases whose records have not expired at `now`. */
  async running(now: number): Promise<RunningRelease[]> {
    const items = await this.table.query(RELEASES_PARTITION);
    const result: RunningRelease[] = [];
    for (const item of items) {
      const { release, expiresAtMs, lastFunction } = item;
      if (typeof release !== 'string' || !isRelease(release) || typeof expiresAtMs !== 'number') continue;
      if (expiresAtMs <= now) continue;
      result.push({
        release,
        expiresAtMs,
        lastFunction: typeof lastFunction === 'string' ? lastFunction : '',
      });
    }
    return result;
  }

  /** The range of running releases including `own` (which is running: the caller is it). */
  async range(own: string, now: number): Promise<ReleaseRange> {
    const releases = await this.running(now);
    let min = own;
    let max = own;
    for (const r of releases) {
      if (releaseLessThan(r.release, min)) min = r.release;
      if (releaseLessThan(max, r.release)) max = r.release;
    }
    return { min, max, releases };
  }
}
