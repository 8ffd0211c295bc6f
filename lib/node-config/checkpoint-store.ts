import * as z from 'zod/mini';
import '../util/zod-mini.ts';
import type { NodeConfigDocument } from '../config/node-config-document.ts';
import { type ItemKey, isConditionFailed, type StateTable } from '../state/dynamodb.ts';
import { errorMessage } from '../util/error-message.ts';

/**
 * Checkpoints of assigned node configs in the state table, one partition per
 * deployment (pk `config`):
 * - sk `checkpoint#<uid>#<resourceVersion>`: the validated document of one
 *   version of the ConfigMap. Never changed once written (a new version of the
 *   ConfigMap is a new item), so a process may keep what it loaded.
 * - sk `state`: which checkpoint is current (and since when, for the trial)
 *   and which one is the last-known-good. Written with a version condition,
 *   so that two invocations deciding at once cannot undo each other.
 */

const PARTITION = 'config';
const STATE_KEY: ItemKey = { pk: PARTITION, sk: 'state' };

/** One version of an assigned ConfigMap. */
export interface ConfigRef {
  uid: string;
  resourceVersion: string;
}

/** Which assigned config is current and which is the last-known-good. */
export interface CheckpointState {
  /** Grows by one with every write; the write is conditional on it. */
  version: number;
  /** The assigned config last downloaded and validated; `since` (epoch ms) starts its trial. */
  current?: ConfigRef & { since: number };
  lastKnownGood?: ConfigRef;
}

/** A checkpoint as loaded: its document, or why it is unusable. */
export type LoadedCheckpoint = { ok: true; document: unknown } | { ok: false; reason: string };

const refSchema = z.object({
  uid: z.string().check(z.minLength(1)),
  resourceVersion: z.string().check(z.minLength(1)),
});
const stateSchema = z.object({
  version: z.number().check(z.int(), z.gte(0)),
  current: z.optional(z.extend(refSchema, { since: z.number() })),
  lastKnownGood: z.optional(refSchema),
});

export function sameRef(a: ConfigRef | undefined, b: ConfigRef | undefined): boolean {
  return a !== undefined && b !== undefined && a.uid === b.uid && a.resourceVersion === b.resourceVersion;
}

export function describeRef(ref: ConfigRef): string {
  return `uid=${ref.uid} resourceVersion=${ref.resourceVersion}`;
}

function checkpointKey(ref: ConfigRef): ItemKey {
  return { pk: PARTITION, sk: `checkpoint#${ref.uid}#${ref.resourceVersion}` };
}

export class NodeConfigCheckpointStore {
  constructor(private readonly table: StateTable) {}

  /**
   * The state record: undefined when there is none, `corrupt` (with why)
   * when it does not have the shape this module writes.
   */
  async readState(): Promise<{ state?: CheckpointState; corrupt?: string }> {
    const item = await this.table.get(STATE_KEY);
    if (!item) return {};
    const parsed = stateSchema.safeParse(item);
    if (parsed.success) return { state: parsed.data };
    return {
      corrupt: `node config state item (pk ${STATE_KEY.pk}, sk ${STATE_KEY.sk}) is corrupt: ${parsed.error.issues
        .map((i) => `${i.path.join('.') || 'item'}: ${i.message}`)
        .join('; ')}`,
    };
  }

  /**
   * Replaces the state. `expectedVersion` is the version read (undefined: there
   * was none; 'any': overwrite a corrupt item). Returns false, writing
   * nothing, when another writer got there first.
   */
  async writeState(next: CheckpointState, expectedVersion: number | undefined | 'any'): Promise<boolean> {
    try {
      await this.table.put(
        { ...STATE_KEY, ...next },
        expectedVersion === 'any'
          ? {}
          : {
              condition:
                expectedVersion === undefined
                  ? { expression: 'attribute_not_exists(pk)' }
                  : { expression: '#v = :v', names: { '#v': 'version' }, values: { ':v': expectedVersion } },
            },
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /** Forgets current and last-known-good (the ConfigMap was removed). */
  async clearState(): Promise<void> {
    await this.table.delete(STATE_KEY);
  }

  async writeCheckpoint(
    ref: ConfigRef,
    source: { namespace: string; name: string },
    document: NodeConfigDocument,
    now: number,
  ): Promise<void> {
    await this.table.put({
      ...checkpointKey(ref),
      ...ref,
      namespace: source.namespace,
      name: source.name,
      document: JSON.stringify(document),
      createdAt: new Date(now).toISOString(),
    });
  }

  /** The checkpoint's document, parsed but not yet validated; missing or unreadable items are not ok. */
  async loadCheckpoint(ref: ConfigRef): Promise<LoadedCheckpoint> {
    const key = checkpointKey(ref);
    const where = `checkpoint ${describeRef(ref)} (pk ${key.pk}, sk ${key.sk})`;
    const item = await this.table.get(key);
    if (!item) return { ok: false, reason: `${where} is missing` };
    if (item.uid !== ref.uid || item.resourceVersion !== ref.resourceVersion) {
      return { ok: false, reason: `${where} is corrupt: it names another config` };
    }
    if (typeof item.document !== 'string') {
      return { ok: false, reason: `${where} is corrupt: no document attribute` };
    }
    try {
      return { ok: true, document: JSON.parse(item.document) };
    } catch (err) {
      return {
        ok: false,
        reason: `${where} is corrupt: document is not JSON (${errorMessage(err)})`,
      };
    }
  }
}
