import type Docker from 'dockerode';
import { hasDependents, isEngineNotFound } from './engine-errors.ts';
import type { EngineState } from './engine-state.ts';
import { LABELS, labelFilter, volumeName } from './names.ts';

/**
 * Rounds of list-and-remove: a concurrent poller may create an instance while
 * we remove, and the deletion marker waits for a round of its own.
 */
const ROUNDS = 4;

/**
 * Removes every object of one pod uid from the engine, killing what runs:
 * its instances first, then the infra container (Podman refuses to remove a
 * container others joined), then, once a list shows nothing else of the pod
 * left, the deletion marker, then its volumes. Touches nothing of any other
 * uid. Returns how many containers it removed.
 *
 * The marker goes last because it is what tells a delete that reads the pod
 * meanwhile (a retried pod-sync, a second remover) that the pod is being
 * deleted already: removed while an instance still stood (being removed by
 * another remover), that delete would find the pod running and unmarked and
 * start a graceful delete of it again.
 */
export async function removePod(
  docker: Docker,
  state: EngineState,
  uid: string,
  volumeNames: readonly string[],
  signal?: AbortSignal,
): Promise<number> {
  const opts = signal ? { abortSignal: signal } : {};
  let removed = 0;
  for (let round = 0; ; round++) {
    const listed = await state.containers({ [LABELS.uid]: uid }, signal);
    if (listed.length === 0) break;
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
  return removed;
}
