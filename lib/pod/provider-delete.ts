import type { V1Pod } from '@kubernetes/client-node';
import { isProviderNotFound, type PodProvider } from '../provider/provider.ts';
import type { KnownPodIdentity } from './known/known-pods.ts';

/**
 * Deleting a pod in the provider, as pod-sync and the dangling-pod pass both
 * do: idempotent (deletePod may be called many times; a pod the provider does
 * not have counts as deleted), and only ever the uid meant.
 */

/**
 * deletePod, with "the provider does not have it" counted as done:
 * `stopped` when the provider says the pod's processes ended at once
 * (DeletedPodStatus), `deleted` when they may still run for a while.
 */
export async function deleteInProvider(
  provider: PodProvider,
  pod: V1Pod,
  signal?: AbortSignal,
): Promise<'deleted' | 'stopped' | 'not-found'> {
  try {
    return (await provider.deletePod(pod, signal)) === 'stopped' ? 'stopped' : 'deleted';
  } catch (err) {
    if (isProviderNotFound(err)) return 'not-found';
    throw err;
  }
}

/**
 * Deletes the provider's pod of the record's name if it is the record's uid
 * (never a newer pod's). Whether the provider had it.
 */
export async function deleteUidInProvider(
  provider: PodProvider,
  record: KnownPodIdentity,
  signal?: AbortSignal,
): Promise<boolean> {
  const current = await provider.getPod(record.namespace, record.name, signal);
  if (current?.metadata?.uid !== record.uid) return false;
  await deleteInProvider(provider, current, signal);
  return true;
}
