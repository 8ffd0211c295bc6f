import { podKey } from '../../kube/pod-key.ts';
import { isConditionFailed, type StateTable, type StoredItem } from '../../state/dynamodb.ts';
import type { KnownPod, KnownPodIdentity } from './known-pod.ts';
import { claimExpiredBefore, type KnownPodClaim } from './known-pod-claim.ts';
import {
  FORCE_DELETE_INDEX_PARTITION,
  forceDeleteDueAt,
  forceDeleteSortKey,
  fromItem,
  HELD_BY,
  heldBy,
  IDENTITY_NAMES,
  IDENTITY_SET,
  identityValues,
  knownPodKey,
  toItem,
  unchangedSince,
  VERSION,
} from './known-pod-item.ts';

export type { KnownPod, KnownPodIdentity } from './known-pod.ts';
export { isClaimLive, isMarkLive, type KnownPodClaim } from './known-pod-claim.ts';

/** Another writer changed the record since it was read: re-read and reconcile again. */
export class KnownPodConflictError extends Error {
  override readonly name = 'KnownPodConflictError';
}

/** The known-pod records in the state table. */
export class KnownPodStore {
  constructor(private readonly table: StateTable) {}

  async get(node: string, namespace: string, name: string): Promise<KnownPod | undefined> {
    const item = await this.table.get(knownPodKey(node, namespace, name));
    return item ? fromItem(item) : undefined;
  }

  /** Every known pod of `node`. */
  async list(node: string): Promise<KnownPod[]> {
    return (await this.table.query(`pods#${node}`)).map(fromItem);
  }

  /**
   * Writes `next` whole if the stored record still has `expectedVersion`
   * (undefined: must not exist yet); the stored version becomes
   * expectedVersion + 1. Overwrites `statusHash` with whatever `next` says:
   * prefer the targeted writes below.
   * @throws KnownPodConflictError when another writer got there first.
   */
  async put(next: Omit<KnownPod, 'version'>, expectedVersion: number | undefined): Promise<KnownPod> {
    const record: KnownPod = { ...next, version: (expectedVersion ?? 0) + 1 };
    await this.conditional(record, () =>
      this.table.put(toItem(record), {
        condition:
          expectedVersion === undefined
            ? { expression: 'attribute_not_exists(pk)' }
            : { expression: '#v = :v', names: VERSION, values: { ':v': expectedVersion } },
      }),
    );
    return record;
  }

  /**
   * Takes the claim to call the provider for `identity`: creates the record
   * when `current` is undefined, else requires it unchanged (same version and
   * uid). Replaces an expired claim.
   * @throws KnownPodConflictError when another writer got there first.
   */
  claim(current: KnownPod | undefined, identity: KnownPodIdentity, claim: KnownPodClaim): Promise<KnownPod> {
    return this.update(
      identity,
      {
        expression: `SET ${IDENTITY_SET}, #claim = :claim, #v = :next`,
        names: { ...IDENTITY_NAMES, '#claim': 'claim', ...VERSION },
        values: { ...identityValues(identity), ':claim': { ...claim }, ':next': (current?.version ?? 0) + 1 },
      },
      unchangedSince(current, identity),
    );
  }

  /**
   * Records that the claim's hash is now applied in the provider and drops the
   * claim, if `token` still holds it. `status`: the status just written to the
   * API server under the claim, recorded in the same write as a
   * compare-and-set on the hash the writer decided from (as
   * {@link recordStatus}); when that part fails (pod-status recorded another
   * status meanwhile), the claim is completed without it and the status hash
   * forgotten, so that the next poll writes the provider's status again.
   * `activeDeadlineSeconds`: the applied spec's, recorded with its hash
   * (removed when it has none) for pod-status's deadline (active-deadline.ts).
   * @throws KnownPodConflictError when the claim was taken over or the record forgotten.
   */
  async completeClaim(
    pod: KnownPod,
    token: string,
    appliedHash: string,
    options: { status?: { seen: string | undefined; hash: string }; activeDeadlineSeconds?: number } = {},
  ): Promise<KnownPod> {
    const deadline = options.activeDeadlineSeconds;
    const names = {
      '#applied': 'appliedHash',
      '#claim': 'claim',
      '#push': 'pushUntil',
      '#deadline': 'activeDeadlineSeconds',
      ...VERSION,
    };
    const values = {
      ':applied': appliedHash,
      ':one': 1,
      ...(deadline !== undefined ? { ':deadline': deadline } : {}),
    };
    const applied = `SET #applied = :applied, #v = #v + :one${deadline !== undefined ? ', #deadline = :deadline' : ''}`;
    const noDeadline = deadline === undefined ? ', #deadline' : '';
    const status = options.status;
    if (status) {
      try {
        return await this.update(
          pod,
          {
            expression: `${applied}, #status = :status REMOVE #claim, #push${noDeadline}`,
            names: { ...names, '#status': 'statusHash' },
            values: { ...values, ':status': status.hash },
          },
          {
            expression: `${HELD_BY} AND ${status.seen === undefined ? 'attribute_not_exists(#status)' : '#status = :seen'}`,
            names: { '#claim': 'claim', '#token': 'token', '#status': 'statusHash' },
            values: { ':token': token, ...(status.seen === undefined ? {} : { ':seen': status.seen }) },
          },
        );
      } catch (err) {
        if (!(err instanceof KnownPodConflictError)) throw err;
      }
    }
    return this.update(
      pod,
      {
        expression: `${applied} REMOVE #claim, #push${status ? ', #status' : ''}${noDeadline}`,
        names: { ...names, ...(status ? { '#status': 'statusHash' } : {}) },
        values,
      },
      heldBy(token),
    );
  }

  /**
   * Drops the claim without applying anything (the provider call failed), if
   * `token` still holds it.
   * @throws KnownPodConflictError when the claim was taken over or the record forgotten.
   */
  releaseClaim(pod: KnownPod, token: string): Promise<KnownPod> {
    return this.update(
      pod,
      {
        expression: 'SET #v = #v + :one REMOVE #claim',
        names: { '#claim': 'claim', ...VERSION },
        values: { ':one': 1 },
      },
      heldBy(token),
    );
  }

  /**
   * Records that the provider was told to delete the pod and when its grace
   * period ends, which puts the record on the force-delete index. Creates the
   * record when `current` is undefined, else requires it unchanged. Drops an
   * (expired) claim and a hand-off.
   * @throws KnownPodConflictError when another writer got there first.
   */
  markTerminating(
    current: KnownPod | undefined,
    identity: KnownPodIdentity,
    forceDeleteAt: string,
  ): Promise<KnownPod> {
    return this.update(
      identity,
      {
        expression: `SET ${IDENTITY_SET}, #due = :due, #gpk = :gpk, #gsk = :gsk, #v = :next REMOVE #claim, #handoff`,
        names: {
          ...IDENTITY_NAMES,
          '#due': 'forceDeleteAt',
          '#gpk': 'gsi1pk',
          '#gsk': 'gsi1sk',
          '#claim': 'claim',
          '#handoff': 'handedOffUntil',
          ...VERSION,
        },
        values: {
          ...identityValues(identity),
          ':due': forceDeleteAt,
          ':gpk': FORCE_DELETE_INDEX_PARTITION,
          ':gsk': forceDeleteSortKey(identity, forceDeleteAt),
          ':next': (current?.version ?? 0) + 1,
        },
      },
      unchangedSince(current, identity),
    );
  }

  /**
   * Records the hash of the status just written for this uid, if the record
   * still has `seen` (the hash the writer decided from; undefined: none).
   * Two writers of one pod's status (pod-status and a pushing pod-sync, or
   * two pod-status holders for a moment) cannot tell whose API write landed
   * last, so the loser of this compare-and-set must {@link forgetStatus}.
   * `handOff`: the status leaves the force delete to pod-sync until `until`
   * (see handedOffUntil), if the record still has this forceDeleteAt.
   * Leaves the version alone: it says nothing pod-sync decides from.
   * @throws KnownPodConflictError when the hash changed, or the record is gone or about another uid.
   */
  async recordStatus(
    pod: KnownPodIdentity,
    seen: string | undefined,
    statusHash: string,
    handOff?: { forceDeleteAt: string; until: string },
  ): Promise<void> {
    const names: Record<string, string> = { '#uid': 'uid', '#status': 'statusHash', '#push': 'pushUntil' };
    const values: Record<string, string> = { ':uid': pod.uid, ':status': statusHash };
    let set = '#status = :status';
    let condition = `#uid = :uid AND ${seen === undefined ? 'attribute_not_exists(#status)' : '#status = :seen'}`;
    if (seen !== undefined) values[':seen'] = seen;
    if (handOff) {
      const due = forceDeleteDueAt({ forceDeleteAt: handOff.forceDeleteAt, handedOffUntil: handOff.until });
      Object.assign(names, { '#handoff': 'handedOffUntil', '#gsk': 'gsi1sk', '#due': 'forceDeleteAt' });
      Object.assign(values, {
        ':handoff': handOff.until,
        ':gsk': forceDeleteSortKey(pod, due ?? handOff.until),
      });
      values[':due'] = handOff.forceDeleteAt;
      set += ', #handoff = :handoff, #gsk = :gsk';
      condition += ' AND #due = :due';
    }
    await this.update(
      pod,
      { expression: `SET ${set} REMOVE #push`, names, values },
      { expression: condition, names, values },
    );
  }

  /**
   * Forgets which status was written for this uid (and any push under way),
   * so that the next poll writes the provider's status again: what a writer
   * does when it cannot tell whether its write or another's was the last, or
   * when its push failed.
   * @throws KnownPodConflictError when the record is gone or is about another uid.
   */
  async forgetStatus(pod: KnownPodIdentity): Promise<void> {
    await this.update(
      pod,
      {
        expression: 'REMOVE #status, #push',
        names: { '#status': 'statusHash', '#push': 'pushUntil' },
        values: {},
      },
      { expression: '#uid = :uid', names: { '#uid': 'uid' }, values: { ':uid': pod.uid } },
    );
  }

  /**
   * Forgets the pod if the record still has `expectedVersion` and, given
   * `now` (ISO), is not handed off to pod-sync past it.
   * @throws KnownPodConflictError otherwise.
   */
  async delete(pod: KnownPod, now?: string): Promise<void> {
    const names: Record<string, string> = { ...VERSION };
    const values: Record<string, unknown> = { ':v': pod.version };
    let expression = '#v = :v';
    if (now !== undefined) {
      expression += ' AND (attribute_not_exists(#handoff) OR #handoff <= :now)';
      Object.assign(names, { '#handoff': 'handedOffUntil' });
      Object.assign(values, { ':now': now });
    }
    const condition = { expression, names, values };
    await this.conditional(pod, () =>
      this.table.delete(knownPodKey(pod.node, pod.namespace, pod.name), { condition }),
    );
  }

  /**
   * Forgets the record of this uid without reading it, unless another
   * invocation's claim on it is live at `nowMs` (isClaimLive): for a pod already
   * force-deleted from the API server. Whether it was forgotten; a record
   * that is claimed, gone or about another uid stays (the pod's DELETED
   * event deals with it).
   */
  async forgetDone(pod: KnownPodIdentity, nowMs: number): Promise<boolean> {
    try {
      await this.table.delete(knownPodKey(pod.node, pod.namespace, pod.name), {
        condition: {
          expression: '#uid = :uid AND (attribute_not_exists(#claim) OR #claim.#until < :now)',
          names: { '#uid': 'uid', '#claim': 'claim', '#until': 'until' },
          values: { ':uid': pod.uid, ':now': claimExpiredBefore(nowMs) },
        },
      });
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  /**
   * Records whose force-delete is due at or before `now` (ISO), oldest first,
   * across all nodes. Read from an index, so possibly a moment stale: act on
   * them with conditional writes only.
   */
  async dueForceDeletes(now: string, limit = 100): Promise<KnownPod[]> {
    const items = await this.table.query(FORCE_DELETE_INDEX_PARTITION, {
      index: 'gsi1',
      sk: { op: '<=', value: `${now}#\uffff` },
      limit,
    });
    return items.map(fromItem);
  }

  private async update(
    pod: KnownPodIdentity,
    update: { expression: string; names: Record<string, string>; values: Record<string, unknown> },
    condition: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> },
  ): Promise<KnownPod> {
    let item: StoredItem | undefined;
    await this.conditional(pod, async () => {
      item = await this.table.update(knownPodKey(pod.node, pod.namespace, pod.name), update, { condition });
    });
    if (!item) throw new Error(`update of known pod ${podKey(pod)} returned nothing`);
    return fromItem(item);
  }

  private async conditional(pod: KnownPodIdentity, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (isConditionFailed(err)) {
        throw new KnownPodConflictError(`${podKey(pod)} on ${pod.node} changed concurrently`, {
          cause: err,
        });
      }
      throw err;
    }
  }
}
