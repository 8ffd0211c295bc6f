import type { V1Container, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import {
  DownwardApiError,
  type DownwardApiOptions,
  fieldValue as kubeFieldValue,
  resourceFieldValue as kubeResourceFieldValue,
} from '../../kube/downward-api.ts';
import { ENV_REASONS, EnvResolveError } from './env-reasons.ts';

/**
 * The downward API as env sees it (lib/kube/downward-api.ts): a field or
 * resource it cannot give keeps the container from being created
 * (CreateContainerConfigError).
 */

export type { DownwardApiOptions };

export function fieldValue(pod: V1Pod, fieldPath: string, options: DownwardApiOptions = {}): string {
  return asEnvError(() => kubeFieldValue(pod, fieldPath, options));
}

export function resourceFieldValue(
  pod: V1Pod,
  container: V1Container,
  ref: V1ResourceFieldSelector,
  variable: string,
  options: DownwardApiOptions = {},
): string {
  return asEnvError(() => kubeResourceFieldValue(pod, container, ref, `env "${variable}"`, options));
}

function asEnvError(value: () => string): string {
  try {
    return value();
  } catch (err) {
    if (err instanceof DownwardApiError)
      throw new EnvResolveError(ENV_REASONS.createContainerConfigError, err.message);
    throw err;
  }
}
