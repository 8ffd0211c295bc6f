import type { V1Container, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import { parseQuantity } from './quantity.ts';

/**
 * The downward API: pod fields (fieldRef) and container resources
 * (resourceFieldRef), with the kubelet's formatting and rounding, as env
 * (lib/pod/env) and downwardAPI volumes (the providers) see them.
 */

/** A field or resource the downward API cannot give; the message names it. */
export class DownwardApiError extends Error {
  override readonly name = 'DownwardApiError';
}

/** Node facts the downward API falls back to. */
export interface DownwardApiOptions {
  /** The node's IP, for `status.hostIP` before the pod has one. */
  hostIp?: string;
  /** Node allocatable, what a resourceFieldRef on a missing limit reports (as the kubelet does). */
  allocatable?: Readonly<Record<string, string>>;
}

/** The downward API fields the kubelet offers to env (fieldpath.ExtractFieldPathAsString plus its own). */
export function fieldValue(pod: V1Pod, fieldPath: string, options: DownwardApiOptions = {}): string {
  const subscript = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (subscript) {
    const map = subscript[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations;
    return map?.[subscript[2] ?? ''] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'metadata.labels':
      return formatMap(pod.metadata?.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata?.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return pod.status?.hostIP || options.hostIp || '';
    case 'status.podIP':
      return pod.status?.podIP ?? '';
    case 'status.podIPs':
      return (pod.status?.podIPs ?? []).map((p) => p.ip).join(',');
  }
  throw new DownwardApiError(`unsupported fieldPath "${fieldPath}" in a fieldRef`);
}

// fieldpath.FormatMap: key="value" lines, sorted.
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map?.[k])}`)
    .join('\n');
}

/**
 * The value of a resourceFieldRef: a limit or request
 * of `container` (or of the container the ref names), divided by the divisor
 * and rounded up, as the kubelet does; a missing limit is the node's
 * allocatable, a missing request 0.
 */
export function resourceFieldValue(
  pod: V1Pod,
  /** The container asking, when the ref names none (env); downwardAPI volumes always name one. */
  container: V1Container | undefined,
  ref: V1ResourceFieldSelector,
  /** What asks, for the error's message: `env "NAME"`, `volume "v" item "path"`. */
  what: string,
  options: DownwardApiOptions = {},
): string {
  const target = ref.containerName
    ? [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
        (c) => c.name === ref.containerName,
      )
    : container;
  if (!target) {
    throw new DownwardApiError(`${what}: container "${ref.containerName}" not found`);
  }
  return resourceValue(target, ref.resource, ref.divisor, options.allocatable ?? {}, what);
}

function resourceValue(
  container: V1Container,
  resource: string,
  divisor: string | undefined,
  allocatable: Readonly<Record<string, string>>,
  what: string,
): string {
  const match = /^(limits|requests)\.(cpu|memory|ephemeral-storage)$/.exec(resource);
  if (!match) {
    throw new DownwardApiError(`${what}: unsupported resource "${resource}" in a resourceFieldRef`);
  }
  const [, kind = '', name = ''] = match;
  const set = kind === 'limits' ? container.resources?.limits : container.resources?.requests;
  const raw = set?.[name] ?? (kind === 'limits' ? allocatable[name] : undefined) ?? '0';
  const value = parseQuantity(String(raw));
  // No divisor, or the API's default of 0, divides by 1 (the kubelet's ExtractContainerResourceValue).
  const given = parseQuantity(divisor === undefined || divisor === '' ? '1' : String(divisor));
  const by = given?.num === 0n ? { num: 1n, den: 1n } : given;
  if (!value || !by) {
    throw new DownwardApiError(`${what}: cannot compute ${resource} from "${raw}" / "${divisor ?? '1'}"`);
  }
  // The kubelet divides cpu in millicores and the others in whole units, each rounded up first.
  const scale = name === 'cpu' ? 1000n : 1n;
  const amount = ceilDiv(value.num * scale, value.den);
  const unit = ceilDiv(by.num * scale, by.den);
  return ceilDiv(amount, unit).toString();
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
