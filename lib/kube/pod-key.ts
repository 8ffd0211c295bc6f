/**
 * `namespace/name`, the key pods are reconciled, indexed and logged by (the
 * shape of client-go's namespace/name cache keys). Takes a pod's metadata or
 * anything that names a pod (an event detail, a known-pod record); a missing
 * part is empty.
 */
export function podKey(
  ref: { namespace?: string | undefined; name?: string | undefined } | undefined,
): string {
  return `${ref?.namespace ?? ''}/${ref?.name ?? ''}`;
}
