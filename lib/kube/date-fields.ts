/**
 * The date-time fields of the kinds the functions read, by path, and their
 * revival into `Date` objects: what `@kubernetes/client-node`'s
 * ObjectSerializer did for every typed answer, and what our code relies on:
 * a pod's spec hash (lib/pod/pod-hash.ts) writes `creationTimestamp` as
 * `Date.toISOString()` does, with milliseconds, and the known-pod records in
 * DynamoDB keep that hash across releases (a string there would change every
 * pod's hash at an upgrade, and update every pod in its provider once);
 * status and condition times read and written back keep their form. A field
 * is revived only at its path in its kind: a label or an annotation named
 * `startTime` stays a string.
 *
 * `V1MicroTime` fields (a Lease's renewTime and acquireTime, an Event's
 * eventTime and series.lastObservedTime) stay the wire strings, as
 * client-node left them (its serializer does not know the type); writes
 * send a MicroTime (micro-time.ts). Watch events are not revived: client-node's
 * Watch handed them over as parsed JSON, and so does watch.ts.
 *
 * The paths were listed from client-node 1.4's type map (every attribute of
 * type Date reachable from each kind); test/unit/date-fields.test.ts checks
 * them against it, so a client-node upgrade that adds one fails there.
 */

const OBJECT_META = ['creationTimestamp', 'deletionTimestamp', 'managedFields[].time'];
const CONTAINER_STATE = ['running.startedAt', 'terminated.startedAt', 'terminated.finishedAt'];
const CONTAINER_STATUS_LISTS = ['containerStatuses', 'initContainerStatuses', 'ephemeralContainerStatuses'];

function meta(prefix = ''): string[] {
  return OBJECT_META.map((p) => `${prefix}metadata.${p}`);
}

/** Date paths per kind, as client-node's models name them. */
export const DATE_PATHS = {
  Pod: [
    ...meta(),
    ...meta('spec.volumes[].ephemeral.volumeClaimTemplate.'),
    'status.conditions[].lastProbeTime',
    'status.conditions[].lastTransitionTime',
    ...CONTAINER_STATUS_LISTS.flatMap((list) =>
      ['state', 'lastState'].flatMap((state) => CONTAINER_STATE.map((p) => `status.${list}[].${state}.${p}`)),
    ),
    'status.startTime',
  ],
  Node: [
    ...meta(),
    'spec.taints[].timeAdded',
    'status.conditions[].lastHeartbeatTime',
    'status.conditions[].lastTransitionTime',
  ],
  Lease: meta(),
  Namespace: [...meta(), 'status.conditions[].lastTransitionTime'],
  Secret: meta(),
  ConfigMap: meta(),
  Service: [...meta(), 'status.conditions[].lastTransitionTime'],
  Event: [...meta(), 'firstTimestamp', 'lastTimestamp'],
  TokenReview: meta(),
  SubjectAccessReview: meta(),
  Status: [],
} as const satisfies Record<string, readonly string[]>;

export type DatedKind = keyof typeof DATE_PATHS;

/** A path tree: `true` at a date field, `[]` for every element of a list. */
interface PathTree {
  [key: string]: PathTree | true;
}

function compile(paths: readonly string[]): PathTree {
  const root: PathTree = {};
  for (const path of paths) {
    const steps = path
      .split('.')
      .flatMap((step) => (step.endsWith('[]') ? [step.slice(0, -2), '[]'] : [step]));
    let node = root;
    steps.forEach((step, i) => {
      if (i === steps.length - 1) {
        node[step] = true;
        return;
      }
      let next = node[step];
      if (next === true) throw new Error(`date path ${path} goes through a date`);
      if (!next) {
        next = {};
        node[step] = next;
      }
      node = next;
    });
  }
  return root;
}

const TREES = Object.fromEntries(
  Object.entries(DATE_PATHS).map(([kind, paths]) => [kind, compile(paths)]),
) as Record<DatedKind, PathTree>;

function revive(value: unknown, tree: PathTree | true): unknown {
  // client-node: `new Date(data)` for any value that is not null or undefined.
  if (tree === true) return value === null || value === undefined ? value : new Date(value as string);
  if (typeof value !== 'object' || value === null) return value;
  const each = tree['[]'];
  if (Array.isArray(value)) {
    if (each) for (let i = 0; i < value.length; i++) value[i] = revive(value[i], each);
    return value;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(tree)) {
    const sub = tree[key];
    if (key !== '[]' && sub && record[key] !== undefined) record[key] = revive(record[key], sub);
  }
  return record;
}

/** `object` (an answer of that kind, parsed JSON) with its date-time fields made Dates, in place. */
export function reviveDates<T>(kind: DatedKind, object: T): T {
  return revive(object, TREES[kind]) as T;
}

/**
 * A list of that kind with its items' dates revived, and the list's
 * `metadata.continue` as `_continue`, the name client-node's V1ListMeta
 * gives it (and our pager reads).
 */
export function reviveList<T>(kind: DatedKind, list: T): T {
  const record = list as { items?: unknown[]; metadata?: Record<string, unknown> };
  for (const item of record.items ?? []) reviveDates(kind, item);
  const meta = record.metadata;
  if (meta && 'continue' in meta) {
    const next = meta.continue;
    delete meta.continue;
    if (next !== undefined) meta._continue = next;
  }
  return list;
}
