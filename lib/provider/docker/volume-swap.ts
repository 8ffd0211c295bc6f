import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log/logger.ts';
import type { FileProjection } from '../file-volumes.ts';
import {
  SWAP_STOOD_DOWN,
  swapCommand,
  timestampDirName,
  updateLayout,
  visibleNames,
} from './atomic-layout.ts';
import { heldVolumePath } from './container-config.ts';
import { isNameConflict } from './engine-errors.ts';
import { type PodIdentity, volumeName } from './names.ts';
import { tarArchive } from './tar-archive.ts';

/**
 * An update of a file volume on the engine (see volume-delivery.ts): the
 * new timestamped directory and `..data_tmp` written through the infra
 * container, then the rename of `..data_tmp` over `..data` in a short-lived
 * container of the swap image that mounts the volume.
 */

export interface SwapDeps {
  docker: Docker;
  clock: Clock;
  log: Logger;
  swapImage: string;
  pullImage: (image: string, signal?: AbortSignal) => Promise<void>;
}

/**
 * Writes the new files beside the old ones, then swaps `..data` to them in a short-lived container;
 * false when a concurrent swap of the volume stood in the way.
 */
export async function swapVolume(
  deps: SwapDeps,
  plan: PodIdentity & { fsGroup?: number },
  volume: string,
  infraId: string,
  files: readonly FileProjection[],
  digest: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const { docker, clock } = deps;
  const opts = signal ? { abortSignal: signal } : {};
  const dir = timestampDirName(new Date(clock.now()), digest);
  await docker
    .getContainer(infraId)
    .putArchive(tarArchive(updateLayout(files, dir, plan.fsGroup), new Date(clock.now())), {
      path: heldVolumePath(volume),
      ...opts,
    });
  await deps.pullImage(deps.swapImage, signal);
  const name = `${volumeName(plan.uid, volume)}_swap`;
  let container: Docker.Container;
  try {
    container = await docker.createContainer({
      name,
      Image: deps.swapImage,
      Cmd: swapCommand(dir, visibleNames(files)),
      HostConfig: {
        NetworkMode: 'none',
        RestartPolicy: { Name: 'no' },
        Binds: [`${volumeName(plan.uid, volume)}:/v`],
      },
      ...opts,
    });
  } catch (err) {
    // Another invocation swaps the same volume now, or a crash left its swap container: removed once it
    // is not running, and the volume read again next time.
    if (isNameConflict(err)) {
      const left = await docker
        .getContainer(name)
        .inspect(opts)
        .catch(() => undefined);
      if (left && !left.State.Running)
        await docker
          .getContainer(name)
          .remove({ force: true })
          .catch(() => undefined);
      return false;
    }
    throw err;
  }
  try {
    await container.start(opts);
    const result = (await container.wait(opts)) as { StatusCode?: number };
    if (result.StatusCode === SWAP_STOOD_DOWN) return false;
    if (result.StatusCode !== 0)
      throw new Error(`the swap of volume ${volume} exited ${result.StatusCode ?? 'without a code'}`);
    deps.log.info(
      { pod: `${plan.namespace}/${plan.name}`, uid: plan.uid, volume },
      'docker provider: volume updated',
    );
    return true;
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
