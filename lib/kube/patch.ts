/**
 * Per-call options of the typed clients, in the shape client-node's
 * `setHeaderOptions` gave them, so that a call site names a patch's strategy
 * the same way: `setHeaderOptions('Content-Type', PatchStrategy.MergePatch)`.
 */

/** The Content-Type of each patch strategy the API server accepts. */
export const PatchStrategy = {
  /** RFC 6902 operations. */
  JsonPatch: 'application/json-patch+json',
  /** RFC 7386: objects merged, lists replaced. */
  MergePatch: 'application/merge-patch+json',
  /** Merged by each field's patch strategy (lists of conditions or taints merged by key). */
  StrategicMergePatch: 'application/strategic-merge-patch+json',
  /** Server-side apply: fields owned by the request's field manager. */
  ServerSideApply: 'application/apply-patch+yaml',
} as const;

export type PatchContentType = (typeof PatchStrategy)[keyof typeof PatchStrategy];

/** Options of one call: extra request headers. */
export interface RequestOptions {
  headers?: Record<string, string>;
}

/** `options` (or none) with the header `name` set to `value`. */
export function setHeaderOptions(name: string, value: string, options: RequestOptions = {}): RequestOptions {
  return { ...options, headers: { ...options.headers, [name]: value } };
}
