import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import { heldVolumePath } from './container-config.ts';
import { isEngineNotFound } from './engine-errors.ts';
import { volumeRootEntry } from './fs-group.ts';
import { HOSTS_VOLUME, infraName } from './names.ts';
import type { PodPlan } from './pod-plan.ts';
import { tarArchive } from './tar-archive.ts';

/**
 * Sets each emptyDir's directory as the kubelet leaves it (emptyDir's
 * setupDir, then SetVolumeOwnership): mode 0777 whatever the engine made
 * it, and with the pod's fsGroup in its group with setgid (fs-group.ts).
 * Written through the infra container that holds every emptyDir, once, when
 * the pod is created, before any of its containers.
 */
export async function prepareEmptyDirs(
  deps: { docker: Docker; clock: Clock },
  plan: PodPlan,
  signal?: AbortSignal,
): Promise<void> {
  const archive = tarArchive([volumeRootEntry(plan.fsGroup)], new Date(deps.clock.now()));
  for (const volume of plan.volumes) {
    if (!volume.held || volume.files || volume.name === HOSTS_VOLUME) continue;
    await deps.docker
      .getContainer(infraName(plan.uid))
      .putArchive(archive, { path: heldVolumePath(volume.name), ...(signal ? { abortSignal: signal } : {}) })
      .catch((err: unknown) => {
        // The infra container went away meanwhile (the pod is being removed): nothing to set.
        if (!isEngineNotFound(err)) throw err;
      });
  }
}
