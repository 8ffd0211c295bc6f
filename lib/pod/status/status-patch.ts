import type { V1PodStatus } from '@kubernetes/client-node';

/**
 * A pod status write as a JSON merge patch (RFC 7386) from the status read
 * to the status wanted, so a field neither side names is left as the API
 * server has it. The status as read comes through client-node's models
 * (typed-calls.ts), which drop the fields of an API server newer than them;
 * a PUT of that status would clear them, the patch does not mention them.
 *
 * Not the kubelet's strategic merge patch: that one needs the API server to
 * know every field the patch names (a v1.20 API server answers 500 "unable
 * to find api field in struct PodStatus" to `hostIPs`, a 1.28 field we
 * write), while a merge patch's unknown fields are dropped as a PUT's are.
 * Lists are sent whole when they changed (conditions, pod IPs, container
 * statuses), as the PUT sent them; a field no longer wanted is sent as null.
 * `metadata.uid` and `metadata.resourceVersion` guard the write: the API
 * server refuses it with 409 when the resourceVersion no longer matches, and
 * when the pod was replaced by one with the same name.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The JSON form of a value as the request will carry it (Dates as their ISO strings, undefined left out). */
function wire(value: unknown): Json {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as Json);
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function same(a: Json | undefined, b: Json | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The merge patch from one object to another: changed fields set, removed ones null, nested objects patched in turn. */
function objectPatch(from: JsonObject, to: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    const before = from[key];
    if (same(before, value)) continue;
    if (isObject(before) && isObject(value)) {
      patch[key] = objectPatch(before, value);
    } else {
      patch[key] = value;
    }
  }
  return patch;
}

/**
 * The merge patch that turns `from` (the pod's status as read) into `to`,
 * guarded by the pod's uid and resourceVersion.
 */
export function podStatusPatch(
  from: V1PodStatus | undefined,
  to: V1PodStatus,
  pod: { uid: string; resourceVersion?: string | undefined },
): JsonObject {
  const before = wire(from ?? {});
  const after = wire(to);
  const status = objectPatch(isObject(before) ? before : {}, isObject(after) ? after : {});
  return {
    metadata: { uid: pod.uid, ...(pod.resourceVersion ? { resourceVersion: pod.resourceVersion } : {}) },
    status,
  };
}
