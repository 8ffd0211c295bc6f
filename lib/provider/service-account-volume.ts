import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';

/** Where Kubernetes mounts a pod's service account token. */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The service-account token volume the API server's ServiceAccount admission
 * adds to every pod (a `<sa>-token-*` secret, or a projected
 * `kube-api-access-*` volume with a serviceAccountToken source), mounted
 * nowhere but at SERVICE_ACCOUNT_MOUNT. The Docker provider serves both,
 * the Secret one like any Secret volume, the projected one's token from the
 * TokenRequest API (volume-tokens.ts); ECS Fargate serves the Secret one
 * like any Secret volume (its token through SSM, never in a task
 * definition) and leaves the projected one out (isAdmissionTokenProjection).
 */
export function isServiceAccountTokenVolume(volume: V1Volume, pod: V1Pod): boolean {
  const mountedAt = allContainers(pod).flatMap((c) =>
    (c.volumeMounts ?? []).filter((m) => m.name === volume.name).map((m) => m.mountPath),
  );
  if (mountedAt.some((path) => path !== SERVICE_ACCOUNT_MOUNT)) return false;
  if (volume.secret?.secretName?.includes('-token-')) return true;
  return volume.projected?.sources?.some((s) => s.serviceAccountToken !== undefined) ?? false;
}

/**
 * The projected `kube-api-access-*` volume the ServiceAccount admission of
 * Kubernetes 1.21+ adds (a serviceAccountToken source, mounted only at
 * SERVICE_ACCOUNT_MOUNT): the ECS provider, which serves Secret volumes (the
 * `<sa>-token-*` one of a 1.20 API server included) but no token sources,
 * leaves it unmounted rather than refuse every pod of such a
 * cluster. A projected token source the pod asks for itself is refused.
 */
export function isAdmissionTokenProjection(volume: V1Volume, pod: V1Pod): boolean {
  return (
    (volume.projected?.sources?.some((s) => s.serviceAccountToken !== undefined) ?? false) &&
    isServiceAccountTokenVolume(volume, pod)
  );
}

/** The pod's init containers, then its app containers. */
export function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}
