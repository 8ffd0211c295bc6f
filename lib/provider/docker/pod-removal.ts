import type Docker from 'dockerode';
import type { Clock } from '../../clock.ts';
import { deletingConfig, type EngineSettings } from './container-config.ts';
import { hasDependents, isEngineNotFound, isImageMissing, isNameConflict } from './engine-errors.ts';
import type { EngineState } from './engine-state.ts';
import { LABELS, labelFilter, type PodIdentity, volumeName } from './names.ts';
import { removeOnce } from './removals-in-flight.ts';

/**
 * Rounds of list-and-remove: a concurrent poller that listed the pod before
 * its marker existed may still create an instance while we remove, and the
 * deletion marker waits for a round of its own.
 */
const ROUNDS = 4;

export interface RemovalDeps {
  docker: Docker;
  state: EngineState;
  /** The image the deletion marker is created from (the infra image, on the engine for any pod of ours). */
  settings: Pick<EngineSettings, 'infraImage'>;
  clock: Pick<Clock, 'now'>;
}

/**
 * Removes every object of one pod from the engine, killing what runs.
 * Touches nothing of any other uid. Resolves with how many containers it
 * removed. One removal of a uid runs at a time in a process; a second joins
 * the first (removals-in-flight.ts).
 *
 * The deletion marker comes first and goes last. First, because it is what
 * every reader of the pod goes by: a poller (pod-status, another invocation)
 * that sees it only removes, and never creates an instance or starts the
 * infra container again, which a poller that saw the pod unmarked while its
 * instances were being removed would do. Last, because a delete that reads
 * the pod meanwhile (a retried pod-sync, a second remover) would otherwise
 * find it running and unmarked while another remover takes it apart, and
 * start over. In between: the instances, then the infra container (Podman
 * refuses to remove a container others joined), then, once a list shows
 * nothing else of the pod left, the marker; then the volumes.
 */
export function removePod(
  deps: RemovalDeps,
  pod: PodIdentity,
  volumeNames: readonly string[],
  signal?: AbortSignal,
): Promise<number> {
  return removeOnce(pod.uid, async () => {
    const listed = await deps.state.containers({ [LABELS.uid]: pod.uid }, signal);
    const marked = listed.some((c) => c.Labels?.[LABELS.role] === 'deleting');
    if (listed.length > 0 && !marked) await markRemoval(deps, pod, signal);
    const removed = await removeContainers(deps, pod.uid, signal);
    await removeVolumes(deps.docker, pod.uid, volumeNames, signal);
    return removed;
  });
}

/** The deletion marker of a removal that does not wait: its grace period ends now. */
async function markRemoval(deps: RemovalDeps, pod: PodIdentity, signal?: AbortSignal): Promise<void> {
  try {
    await deps.docker.createContainer({
      ...deletingConfig(pod, new Date(deps.clock.now()), deps.settings),
      ...(signal ? { abortSignal: signal } : {}),
    });
  } catch (err) {
    // Marked by another remover meanwhile. Without the image there is no marker to make: remove all the same.
    if (!isNameConflict(err) && !isImageMissing(err)) throw err;
  }
}

async function removeContainers(deps: RemovalDeps, uid: string, signal?: AbortSignal): Promise<number> {
  const { docker, state } = deps;
  const opts = signal ? { abortSignal: signal } : {};
  let removed = 0;
  for (let round = 0; ; round++) {
    const listed = await state.containers({ [LABELS.uid]: uid }, signal);
    if (listed.length === 0) return removed;
    if (round >= ROUNDS)
      throw new Error(
        `docker provider: ${listed.length} containers of pod uid ${uid} remain after ${ROUNDS} removal rounds`,
      );
    const role = (c: Docker.ContainerInfo) => c.Labels?.[LABELS.role];
    const rest = listed.filter((c) => role(c) !== 'deleting');
    const stages =
      rest.length > 0
        ? [rest.filter((c) => role(c) !== 'infra'), rest.filter((c) => role(c) === 'infra')]
        : [listed];
    for (const batch of stages) {
      await Promise.all(
        batch.map(async (c) => {
          state.invalidate(c.Id);
          try {
            await docker.getContainer(c.Id).remove({ force: true, v: true, ...opts });
            removed++;
          } catch (err) {
            // A container created since the list still joins it: the next round removes that one first.
            if (!isEngineNotFound(err) && !hasDependents(err)) throw err;
          }
        }),
      );
    }
  }
}

async function removeVolumes(
  docker: Docker,
  uid: string,
  volumeNames: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  const opts = signal ? { abortSignal: signal } : {};
  const labelled = await docker.listVolumes({
    filters: { label: labelFilter({ [LABELS.uid]: uid }) },
    ...opts,
  });
  const names = new Set([
    ...(labelled.Volumes ?? []).map((v) => v.Name),
    ...volumeNames.map((v) => volumeName(uid, v)),
  ]);
  await Promise.all(
    [...names].map(async (name) => {
      try {
        await docker.getVolume(name).remove({ force: true, ...opts });
      } catch (err) {
        if (!isEngineNotFound(err)) throw err;
      }
    }),
  );
}
