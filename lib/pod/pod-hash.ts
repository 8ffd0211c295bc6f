import { createHash } from 'node:crypto';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';

/**
 * Hashes that stand for "the version of a pod we last acted on", stored in
 * the known-pod record instead of the pod itself (virtual-kubelet keeps the
 * whole last pod in memory and compares with podsEffectivelyEqual, in
 * node/podcontroller.go).
 */

/**
 * JSON with object keys sorted and undefined members dropped, so that equal
 * values give equal text whatever order their keys were built in. Dates
 * become their ISO form, as JSON.stringify writes them.
 */
export function stableJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeys(v)));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sortKeys(v);
  }
  return out;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/**
 * The version of a pod that matters to the provider: spec and metadata,
 * without status, resourceVersion and managedFields, which change with every
 * status write (ours included) and say nothing about what should run. Labels,
 * annotations and the deletion timestamp do count, as in virtual-kubelet's
 * podsEffectivelyEqual.
 */
export function podSpecHash(pod: V1Pod): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = pod.metadata ?? {};
  return digest(stableJson({ metadata, spec: pod.spec ?? {} }));
}

/** The version of a pod status, to tell whether the provider reported something new. */
export function podStatusHash(status: V1PodStatus | undefined): string {
  return digest(stableJson(status ?? {}));
}
