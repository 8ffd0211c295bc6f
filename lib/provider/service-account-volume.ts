import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';

/** Where Kubernetes mounts a pod's service account token. */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The service-account token volume the API server's ServiceAccount admission
 * adds to every pod (a `<sa>-token-*` secret, or a projected
 * `kube-api-access-*` volume with a serviceAccountToken source), mounted
 * nowhere but at SERVICE_ACCOUNT_MOUNT. ECS Fargate does not mount it (the
 * cluster's token has no business in a task definition); the Docker
 * provider serves both, the Secret one like any Secret volume, the
 * projected one's token from the TokenRequest API (file-volumes.ts).
 */
export function isServiceAccountTokenVolume(volume: V1Volume, pod: V1Pod): boolean {
  const mountedAt = allContainers(pod).flatMap((c) =>
    (c.volumeMounts ?? []).filter((m) => m.name === volume.name).map((m) => m.mountPath),
  );
  if (mountedAt.some((path) => path !== SERVICE_ACCOUNT_MOUNT)) return false;
  if (volume.secret?.secretName?.includes('-token-')) return true;
  return volume.projected?.sources?.some((s) => s.serviceAccountToken !== undefined) ?? false;
}

/** The pod's init containers, then its app containers. */
export function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}
